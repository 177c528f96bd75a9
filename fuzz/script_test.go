package fuzz_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFuzzScriptClassifies holds scripts/fuzz.sh (make fuzz) to what it
// must ignore and what it must not: only a run that ends in the fuzz
// runner's own deadline report (golang/go#75804: "--- FAIL" followed by
// nothing but "context deadline exceeded", no input written) is ignored;
// a crasher, a failing seed, a panic, a build error, or the deadline line
// with anything more fails.
func TestFuzzScriptClassifies(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	const status = "fuzz: elapsed: 24s, execs: 491676 (22237/sec), new interesting: 1 (total: 142)\n" +
		"fuzz: elapsed: 25s, execs: 511261 (19239/sec), new interesting: 1 (total: 142)\n"
	const closing = "FAIL\nexit status 1\nFAIL\tgithub.com/npuverify/npuverify/fuzz\t25.1s\n"
	for _, tt := range []struct {
		name, log string
		rc, new   int
		want      string
	}{
		{"pass", status + "PASS\nok  \tgithub.com/npuverify/npuverify/fuzz\t25.1s\n", 0, 0, "pass"},
		// The log of a FuzzSparse24Prune run of 2026-12-05, 25 s.
		{"runner's deadline", status + "--- FAIL: FuzzX (25.02s)\n    context deadline exceeded\n" + closing, 1, 0, "race"},
		{"runner's deadline, no closing lines", status + "--- FAIL: FuzzX (25.02s)\n    context deadline exceeded\n", 1, 0, "race"},
		{"crasher", status + "--- FAIL: FuzzX (3.10s)\n    fuzz_test.go:44: vector_add n=3: got 1 / want 2\n" +
			"    Failing input written to testdata/fuzz/FuzzX/5f1d\n    To re-run:\n    go test -run=FuzzX/5f1d\n" + closing, 1, 1, "fail"},
		{"crasher and deadline", status + "--- FAIL: FuzzX (25.02s)\n    context deadline exceeded\n" + closing, 1, 1, "fail"},
		{"failing seed", "--- FAIL: FuzzX (0.05s)\n    --- FAIL: FuzzX/seed#0 (0.00s)\n        fuzz_test.go:44: got 1 / want 2\n" + closing, 1, 0, "fail"},
		{"deadline and more", status + "--- FAIL: FuzzX (25.02s)\n    context deadline exceeded\n    fuzz_test.go:44: got 1 / want 2\n" + closing, 1, 0, "fail"},
		{"panic", status + "--- FAIL: FuzzX (3.00s)\npanic: runtime error: index out of range\n" + closing, 2, 0, "fail"},
		{"build error", "# github.com/npuverify/npuverify/fuzz\nfuzz/x_test.go:3:2: undefined: y\nFAIL\tgithub.com/npuverify/npuverify/fuzz [build failed]\n", 1, 0, "fail"},
		{"another target's deadline", status + "--- FAIL: FuzzY (25.02s)\n    context deadline exceeded\n" + closing, 1, 0, "fail"},
	} {
		log := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(log, []byte(tt.log), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bash, "../scripts/fuzz.sh", "--classify", "FuzzX", log, strconv.Itoa(tt.rc), strconv.Itoa(tt.new)).Output()
		got := strings.TrimSpace(string(out))
		if got != tt.want || (err != nil) != (tt.want == "fail") {
			t.Errorf("scripts/fuzz.sh --classify FuzzX (%s, exit %d, %d new inputs) = %q, %v, want %q", tt.name, tt.rc, tt.new, got, err, tt.want)
		}
	}
}
