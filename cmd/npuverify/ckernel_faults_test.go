package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/internal/ckernel"
)

// failureOf returns the failure report of case id ("<op>/<name>") from
// check's stdout: the block under "Failures:" whose first line ends in
// [<name>], or "" when the case did not fail.
func failureOf(stdout, id string) string {
	name := id[strings.IndexByte(id, '/')+1:]
	_, fails, ok := strings.Cut(stdout, "\nFailures:\n\n")
	if !ok {
		return ""
	}
	for _, block := range strings.Split(fails, "\n\n") {
		first, _, _ := strings.Cut(block, "\n")
		if strings.HasSuffix(strings.TrimSuffix(first, ": 1 of 1 verdicts failed"), "["+name+"]") ||
			strings.Contains(first, "["+name+"]:") {
			return block
		}
	}
	return ""
}

// TestCKernelFaultsFailDefaultCheck runs `npuverify check` on the default
// (embedded) store through the exec backend with the independent C kernel,
// correct and with one injected fault of each class of issue 9 switched on
// (NPUVERIFY_CKERNEL_FAULT, backend/testdata/ckernel/case.c): a 16-bit
// index, a core's second tile misplaced and a split-K reduction losing a
// slice (size), round half away from zero (ties), the result written over
// an input (clobbered input), and partial sums kept in fp16 for deep K
// (precision loss inside the bound, which the deepk cases' ascend-dual
// policy judges). --run picks, per fault, the cases where it shows and a
// neighbour where it must not: the check exits 1, and each failure names
// the case, the output (or the clobbered input) and, for the size faults,
// the first wrong element; the correct kernel passes every picked case.
func TestCKernelFaultsFailDefaultCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C kernel and checks large recipes")
	}
	bin := ckernel.Build(t) // one binary serves every fault, chosen per run by ckernel.FaultEnv
	type want struct {
		id   string   // the case that must fail
		subs []string // what its failure report must say
		not  []string // what it must not say
	}
	for _, tc := range []struct {
		fault string
		run   string   // the cases checked
		pass  []string // of those, the ones the fault must not touch
		fails []want
	}{
		{"index16", `^vector_add/fp16_uniform_n6553[567]$`,
			[]string{"vector_add/fp16_uniform_n65535", "vector_add/fp16_uniform_n65536"},
			[]want{{id: "vector_add/fp16_uniform_n65537", subs: []string{`output "z"`, "out of bound", "first wrong element at index 65536", "[65536] got="}}}},
		{"tile2", `^gemm/fp16_fp32acc_(tiles_513x17x3073_blocked16|uniform_33x47x17_sequential)$`,
			[]string{"gemm/fp16_fp32acc_uniform_33x47x17_sequential"},
			[]want{{id: "gemm/fp16_fp32acc_tiles_513x17x3073_blocked16", subs: []string{`output "out"`, "out of bound", "first wrong element at index 0"}}}},
		{"splitk", `^gemm/fp16_fp32acc_(deepk_17x4097x33|longk_16x512x16)$`,
			[]string{"gemm/fp16_fp32acc_longk_16x512x16"},
			[]want{{id: "gemm/fp16_fp32acc_deepk_17x4097x33", subs: []string{`output "out"`, "policy ascend-dual: bound:", "out of bound", "first wrong element at index"}}}},
		{"ties", `^vector_add/(fp16_uniform_n17|int8_uniform_n17)$`,
			[]string{"vector_add/int8_uniform_n17"},
			[]want{{id: "vector_add/fp16_uniform_n17", subs: []string{`output "z"`, "exact elements not correctly rounded", "not the correctly rounded"}}}},
		{"clobber", `^(vector_add/fp16_uniform_n17|gemm/fp16_fp32acc_uniform_33x47x17_sequential)$`, nil,
			[]want{
				{id: "vector_add/fp16_uniform_n17", subs: []string{`policy inputs-unchanged`, `input "x" was modified by the backend`, "first difference at element 0"}},
				{id: "gemm/fp16_fp32acc_uniform_33x47x17_sequential", subs: []string{`policy inputs-unchanged`, `input "a" was modified by the backend`}},
			}},
		{"lossy", `^gemm/fp16_fp32acc_(deepk_17x4097x33|longk_16x512x16)$`,
			[]string{"gemm/fp16_fp32acc_longk_16x512x16"},
			[]want{{id: "gemm/fp16_fp32acc_deepk_17x4097x33", subs: []string{`output "out"`, "policy ascend-dual", "above the dual limit", "(emulator "},
				not: []string{"out of bound"}}}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			backend := "exec:env NPUVERIFY_CKERNEL_FAULT=" + tc.fault + " " + bin
			code, o, e := cli(t, "check", "--run", tc.run, "--jobs", "2", "--backend", backend)
			if code != exitFail {
				t.Fatalf("check --run %s with fault %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.run, tc.fault, code, exitFail, o, e)
			}
			for _, id := range tc.pass {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s+pass\s`).MatchString(o) {
					t.Errorf("fault %s: case %s does not pass (the fault must not show there)\nstdout:\n%s", tc.fault, id, o)
				}
			}
			for _, w := range tc.fails {
				f := failureOf(o, w.id)
				if f == "" {
					t.Errorf("fault %s: no failure report for %s\nstdout:\n%s", tc.fault, w.id, o)
					continue
				}
				for _, s := range w.subs {
					if !strings.Contains(f, s) {
						t.Errorf("fault %s: the report of %s lacks %q:\n%s", tc.fault, w.id, s, f)
					}
				}
				for _, s := range w.not {
					if strings.Contains(f, s) {
						t.Errorf("fault %s: the report of %s says %q (want it inside the bound):\n%s", tc.fault, w.id, s, f)
					}
				}
				t.Logf("fault %s:\n%s", tc.fault, firstLines(f, 3))
			}
		})
	}
	t.Run("correct", func(t *testing.T) {
		all := `^(vector_add/(fp16|int8)_uniform_n(17|6553[567])|gemm/fp16_fp32acc_(tiles_513x17x3073_blocked16|uniform_33x47x17_sequential|deepk_17x4097x33|longk_16x512x16))$`
		wantCLI(t, 0, []string{"10 cases: 10 pass"}, "check", "--run", all, "--jobs", "2", "--backend", "exec:"+bin)
	})
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
