package suites

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/npuverify/npuverify/backend/backendtest"
	"github.com/npuverify/npuverify/ops"
)

// DescribeGolden declares the ST spec that puts the backend under the
// conformance suite of package backendtest, the one body
// backendtest.TestBackend runs under plain go test: the embedded golden
// cases (the emulator held to the stored bits and budgets, any other
// backend to each case's accuracy policy), the properties every correct
// implementation satisfies, the same bits from every run, serial or
// concurrent, and clean errors for calls a backend cannot serve. One spec
// per op (label op:<name>), so that a kernel of some ops is held to those
// (NPUVERIFY_OPS, or a label filter). Every failure is reported, each
// with the subtest TestBackend would report it in.
func DescribeGolden(b Backend) bool {
	return Describe("conformance (backendtest)", Label(LabelST), func() {
		for _, op := range ops.Names() {
			It(op+" passes the golden set, the properties and the robustness checks", Label(PrefixOp+op), func(ctx context.Context) {
				opts := []backendtest.Option{backendtest.Ops(op)}
				if testing.Short() {
					opts = append(opts, backendtest.Short())
				}
				if errs := backendtest.Check(ctx, b(), opts...); len(errs) > 0 {
					Fail(conformanceFailures(errs))
				}
			})
		}
	})
}

// conformanceFailures renders the failures of backendtest.Check, each as
// TestBackend reports it, under the subtest it reports it in.
func conformanceFailures(errs []error) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%d conformance failures:\n", len(errs))
	for _, err := range errs {
		var e *backendtest.Error
		if errors.As(err, &e) {
			fmt.Fprintf(&s, "\n--- %s\n", e.Test)
		}
		fmt.Fprintf(&s, "%v\n", err)
	}
	return s.String()
}

// DescribeCLI declares the ST specs that build the npuverify binary and
// run its check over the embedded golden set, as a user would. The
// binary checks the emulator, not the backend under test: label emulator.
func DescribeCLI(moduleRoot string) bool {
	return Describe("npuverify binary", Label(LabelST, LabelEmulator, LabelOpIndependent), Ordered, func() {
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
