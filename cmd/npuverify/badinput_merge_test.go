package main

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/report"
)

// TestReportWriteErrors: a format that failed to render is reported as
// such, exit 3, saying nothing was written, not blamed on --out; a write
// failure names --out, exit 2 (issue 33, item 5).
func TestReportWriteErrors(t *testing.T) {
	for _, c := range []struct {
		err       error
		code      int
		want, not string
	}{
		{&report.RenderError{Format: "html", Err: errors.New("empty axis range")}, exitBackend,
			"npuverify: report: internal error: rendering report.html: empty axis range (nothing written to --out out/r)", "writing --out"},
		{errors.New("out/r: permission denied"), exitUsage, "npuverify: report: writing --out out/r: out/r: permission denied", "rendering"},
	} {
		var stderr bytes.Buffer
		code := exitCode(writeFilesErr("report", "out/r", c.err), &stderr)
		if got := stderr.String(); code != c.code || !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("report --out out/r, WriteFiles error %v: got exit %d, %q; want exit %d, %q without %q", c.err, code, got, c.code, c.want, c.not)
		}
	}
}

// mergeBadInputs are the catalogue's report --merge entries (issue 33,
// items 4 and 6): result files that are no regular file or too large are
// refused before a byte is read, within allocLimit; an incomplete run and
// an empty result are input errors, not passes. Every entry runs without
// the studies, so only the merge itself costs anything.
func mergeBadInputs() []badInput {
	merge := []string{"report", "--out", "{dir}/r", "--precision", "off", "--attention", "off", "--decoding", "off", "--merge"}
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	at := []string{"npuverify: report: --merge: "}
	// shard is a check --json file holding one passing case of shard i/3 of
	// run "r1", which selects 3 cases.
	shard := func(i int, run string) []byte {
		return []byte(`{"meta": {"backend": "emulator", "profile": "ascend910b", "store": "s", "shard": "` + strconv.Itoa(i) + `/3", "run": "` + run + `", "run_cases": "3"},
 "cases": [{"id": "vector_add/c` + strconv.Itoa(i) + `", "op": "vector_add", "verdict": "pass", "outputs": [], "checks": []}]}`)
	}
	return []badInput{
		{name: "merge/FIFO", fifos: []string{"{dir}/shard.json"},
			args: with(merge, "{dir}/shard.json"), code: 2, want: with(at, "{dir}/shard.json", "is a FIFO"),
			unchanged: []string{"{dir}/r"}, maxAlloc: allocLimit},
		{name: "merge/dev zero",
			args: with(merge, "/dev/zero"), code: 2, want: with(at, "/dev/zero", "is a character device"),
			unchanged: []string{"{dir}/r"}, maxAlloc: allocLimit},
		{name: "merge/over the size cap", files: map[string][]byte{"{dir}/big.json": []byte(`{"cases": []}`)}, sizes: map[string]int64{"{dir}/big.json": 1 << 30},
			args: with(merge, "{dir}/big.json"), code: 2, want: with(at, "{dir}/big.json", "1073741824 bytes, more than the limit of 67108864"),
			unchanged: []string{"{dir}/r"}, maxAlloc: allocLimit},
		{name: "merge/symlink to a result file", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1")}, links: map[string]string{"{dir}/link.json": "{dir}/s1.json"},
			args: with(merge, "{dir}/link.json"), code: 2, want: with(at, "{dir}/link.json", "symbolic link"),
			unchanged: []string{"{dir}/r"}},
		{name: "merge/empty result", files: map[string][]byte{"{dir}/e.json": []byte(`{"meta": {}, "cases": []}`)},
			args: with(merge, "{dir}/e.json"), code: 2, want: with(at, "no case to report", "an empty result is not a pass"),
			unchanged: []string{"{dir}/r"}},
		{name: "merge/no case of --op", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1"), "{dir}/s2.json": shard(2, "r1"), "{dir}/s3.json": shard(3, "r1")},
			args: with(merge[:len(merge)-1], "--op", "gemm", "--merge", "{dir}/s1.json", "{dir}/s2.json", "{dir}/s3.json"), code: 2,
			want: with(at, "none of the 3 merged cases is of --op gemm", "no case to report"), unchanged: []string{"{dir}/r"}},
		{name: "merge/shard 1 of 3 alone", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1")},
			args: with(merge, "{dir}/s1.json"), code: 2,
			want:      with(at, "shard 1/3 of run r1, 1 of 3 cases", "missing shard(s) 2/3, 3/3", "incomplete run", "--allow-partial"),
			unchanged: []string{"{dir}/r"}},
		{name: "merge/shard of another run", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1"), "{dir}/s2.json": shard(2, "r2"), "{dir}/s3.json": shard(3, "r1")},
			args: with(merge, "{dir}/s1.json", "{dir}/s2.json", "{dir}/s3.json"), code: 2,
			want: with(at, "{dir}/s2.json", `meta run = "r2"`, "another run"), unchanged: []string{"{dir}/r"}},
		{name: "merge/shard 1 of 3, --allow-partial", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1")},
			args: with(merge[:len(merge)-1], "--merge", "--allow-partial", "{dir}/s1.json"), code: 0,
			stdout: []string{"merged 1 file(s): shard 1/3 of run r1, 1 of 3 cases; missing shard(s) 2/3, 3/3", "1 cases: 1 pass"}},
		// Every case moving exactly 1000 GM bytes: the cycles plot's log axis
		// was the empty range [1000, 1000] and the failed HTML render left
		// report.md and report.json of this run beside the old report.html.
		{name: "merge/every x the same power of ten", files: map[string][]byte{"{dir}/k.json": []byte(`{"meta": {}, "cases": [
 {"id": "vector_add/a", "op": "vector_add", "verdict": "pass", "outputs": [], "checks": [],
  "cost": {"device": "ascend910b", "cycles": 100, "gm_bytes_in": 600, "gm_bytes_out": 400, "block_dim": 1}},
 {"id": "vector_add/b", "op": "vector_add", "verdict": "pass", "outputs": [], "checks": [],
  "cost": {"device": "ascend910b", "cycles": 120, "gm_bytes_in": 500, "gm_bytes_out": 500, "block_dim": 1}}]}`)},
			args: with(merge, "{dir}/k.json"), code: 0, stdout: []string{"2 cases: 2 pass", "{dir}/r/report.md, {dir}/r/report.json, {dir}/r/report.html"}},
		{name: "merge/--out under a regular file", files: map[string][]byte{"{dir}/s1.json": shard(1, "r1"), "{dir}/s2.json": shard(2, "r1"), "{dir}/s3.json": shard(3, "r1"), "{dir}/f": []byte("a file")},
			args: with([]string{"report", "--out", "{dir}/f/r", "--precision", "off", "--attention", "off", "--decoding", "off", "--merge"}, "{dir}/s1.json", "{dir}/s2.json", "{dir}/s3.json"), code: 2,
			want: []string{"npuverify: report: writing --out {dir}/f/r: ", "not a directory"}, unchanged: []string{"{dir}/f"}},
		{name: "merge/--allow-partial without --merge",
			args: []string{"report", "--out", "{dir}/r", "--allow-partial"}, code: 2,
			want: []string{"npuverify: report: --allow-partial: only with --merge"}, unchanged: []string{"{dir}/r"}},
	}
}
