package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/internal/ckernel"
)

// TestCClientVectorAdd puts the C client's example driver
// (clients/c/examples/vector_add.c, on clients/c/npuverify.h alone,
// compiled with warnings as errors) under `npuverify check --op
// vector_add` on every embedded vector_add case, once per protocol: exec
// (a process per case) and worker (the same binary, kept running). Both
// must exit 0 with every case passing. It skips when no C compiler is
// found.
func TestCClientVectorAdd(t *testing.T) {
	bin := ckernel.BuildExample(t, "vector_add")
	for _, mode := range []string{"exec", "worker"} {
		t.Run(mode, func(t *testing.T) {
			checkEveryVectorAddCase(t, "check", "--op", "vector_add", "--jobs", "2", "--backend", mode+":"+bin)
		})
	}
}

// checkEveryVectorAddCase runs `npuverify args...` (a check of the
// embedded vector_add cases on a client's example driver) and fails t
// unless it exits 0 with every embedded vector_add case run and passed:
// the client examples implement vector_add alone, so that is the whole of
// what they can be held to.
func checkEveryVectorAddCase(t *testing.T, args ...string) {
	t.Helper()
	checkVectorAddCases(t, "", args...)
}

// checkVectorAddCases is checkEveryVectorAddCase on the embedded
// vector_add cases whose ID run matches ("": all), passed to the command
// as --run.
func checkVectorAddCases(t *testing.T, run string, args ...string) {
	t.Helper()
	re := regexp.MustCompile(run)
	want := 0
	for _, c := range golden.Embedded().Cases() {
		if strings.HasPrefix(c.ID, "vector_add/") && re.MatchString(c.ID) {
			want++
		}
	}
	if want == 0 {
		t.Fatalf("the embedded store has no vector_add case matching %q", run)
	}
	if run != "" {
		args = append(args, "--run", run)
	}
	code, stdout, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("npuverify %s (op vector_add, every embedded case with its own params and seed): exit %d, want 0\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), code, stdout, stderr)
	}
	summary := regexp.MustCompile(`(?m)^(\d+) cases: (\d+) pass, 0 fail, 0 input error, 0 backend error `)
	m := summary.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("npuverify %s: no summary line \"N cases: N pass, 0 fail, 0 input error, 0 backend error\" in stdout:\n%s",
			strings.Join(args, " "), stdout)
	}
	ran, _ := strconv.Atoi(m[1])
	passed, _ := strconv.Atoi(m[2])
	if ran != want || passed != want {
		t.Errorf("npuverify %s: %d cases ran, %d passed; want all %d embedded vector_add cases selected run and passed\n%s",
			strings.Join(args, " "), ran, passed, want, stdout)
	}
}
