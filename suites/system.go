package suites

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
)

// DescribeGolden declares the ST specs that run every embedded golden case
// through the backend: the emulator is held to the stored bits and budgets,
// any other backend to each case's accuracy policy (golden.Check decides).
func DescribeGolden(b Backend) bool {
	return Describe("golden set", Label("ST"), func() {
		It("passes every embedded case", func(ctx context.Context) {
			results, err := golden.Check(ctx, golden.Embedded().WithRecorder(emulator.Recorder()), b(), golden.CheckOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(results).NotTo(BeEmpty(), "the embedded golden set is empty")
			for _, r := range results {
				Expect(r.Pass()).To(BeTrue(), "%s", r.Failure())
			}
		})
	})
}

// DescribeCLI declares the ST specs that build the npuverify binary and
// run its check over the embedded golden set, as a user would.
func DescribeCLI(moduleRoot string) bool {
	return Describe("npuverify binary", Label("ST"), Ordered, func() {
		var bin string
		BeforeAll(func() {
			bin = filepath.Join(GinkgoT().TempDir(), "npuverify")
			out, err := exec.Command("go", "build", "-o", bin, filepath.Join(moduleRoot, "cmd", "npuverify")).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
		})
		It("checks the embedded golden set with exit code 0", func(ctx context.Context) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, "check")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			Expect(err).NotTo(HaveOccurred(), "npuverify check: stderr:\n%s", stderr.String())
			Expect(stdout.String()).To(ContainSubstring("vector_add/fp16_uniform_n257"))
		})
		It("verifies the golden set's integrity with exit code 0", func(ctx context.Context) {
			out, err := exec.CommandContext(ctx, bin, "golden", "verify").CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "npuverify golden verify: %s", out)
		})
		It("exits 2 naming the parameter for a bad --param", func(ctx context.Context) {
			var stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, "run", "vector_add", "--param", "dtype=fp12", "--out", GinkgoT().TempDir())
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			Expect(err).To(BeAssignableToTypeOf(ee))
			Expect(err.(*exec.ExitError).ExitCode()).To(Equal(2), "stderr: %s", stderr.String())
			Expect(stderr.String()).To(HavePrefix("npuverify: "))
			Expect(stderr.String()).To(ContainSubstring("dtype"))
		})
	})
}
