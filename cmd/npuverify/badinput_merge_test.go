package main

import "strconv"

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
		{name: "merge/--allow-partial without --merge",
			args: []string{"report", "--out", "{dir}/r", "--allow-partial"}, code: 2,
			want: []string{"npuverify: report: --allow-partial: only with --merge"}, unchanged: []string{"{dir}/r"}},
	}
}
