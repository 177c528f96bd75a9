package main

// execBadInputs are the catalogue's entries of issue 8 that the backend's
// unit tests (backend/contain_test.go, exec_test.go) cover below the CLI,
// driven here through it: kernels from backend/testdata/kernels that leave
// a FIFO where the harness reads, start a setsid child that outlives a
// timeout, write escape codes to stderr or write into their inputs; files
// the harness reads that are FIFOs, links to /dev/zero, or sparse files
// claiming gigabytes (--in, --profile, a store's case.json and .npy);
// result files (--json, --junit) pointed at what is not a regular file;
// and the flags and environment of check --run, --jobs, --repeat and
// Bazel sharding (issues 9 and 13) given values they must refuse.
func execBadInputs() []badInput {
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	runWith := func(kernel string) []string {
		return []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{out}", "--backend", "exec:" + kernel}
	}
	// Runs that end in a verification failure write their outputs: not
	// into {out}, which the catalogue holds to stay empty on failure.
	runKeep := func(kernel string) []string {
		return []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{dir}/res", "--backend", "exec:" + kernel}
	}
	checkStore := []string{"check", "--golden", "{store}"}
	checkWith := func(kernel string) []string { return with(checkStore, "--backend", "exec:"+kernel) }
	runY := []string{"run", "vector_add", "--in", "x={x}", "--in", "y={dir}/y.npy", "--out", "{out}"}
	inY := []string{"npuverify: run: --in y={dir}/y.npy: ", `tensor "y"`}
	atCase := []string{"npuverify: check: {id}: ", "{case}/case.json"}
	valid17 := npyV1(fp16Dict("(17,)"), zeros(34))
	// A kernel that copies x to z (wrong for vector_add, right in dtype
	// and shape), for the wrappers that run a real kernel first.
	copyX := sh(`cp "$1/x.npy" "$1/out/z.npy"`)
	const gib3 = 3 << 30
	pid := map[string]string{"PIDFILE": "{dir}/pid"}
	fifoRefused := "is a FIFO, not a regular file"
	linkRefused := "is a symbolic link (not followed), not a regular file"
	bazel := func(index, total, status string) map[string]string {
		return map[string]string{envShardIndex: index, envTotalShards: total, envShardStatus: status}
	}
	return []badInput{
		// ---- kernels that leave a FIFO where the harness reads ----
		{name: "exec/timing.json is a FIFO", args: runWith("{kernels}/timing_fifo.sh"), code: 3,
			want: []string{"npuverify: run: ", "backend exec:{kernels}/timing_fifo.sh", "out/timing.json: not a regular file (it is a FIFO)"}},
		{name: "exec/check: timing.json is a FIFO", store: vectorCase, args: checkWith("{kernels}/timing_fifo.sh"), code: 3,
			want: []string{"npuverify: check: {id}: ", "out/timing.json: not a regular file (it is a FIFO)"}},
		{name: "exec/check: output is a FIFO", store: vectorCase, args: checkWith("{kernels}/output_fifo.sh"), code: 3,
			want: []string{"npuverify: check: {id}: ", `output "z"`, "out/z.npy", "is not a regular file"}},

		// ---- kernels whose descendants escape the process group ----
		{name: "exec/setsid child outlives a timeout", env: pid, pidfiles: []string{"{dir}/pid"},
			args: with(runWith("{kernels}/setsid_child.sh"), "--timeout", "1s"), code: 3,
			want: []string{"npuverify: run: ", "timed out after 1s; killed its process group", "started the setsid child"}},
		{name: "exec/check: setsid child outlives a timeout", store: vectorCase, env: pid, pidfiles: []string{"{dir}/pid"},
			args: with(checkWith("{kernels}/setsid_child.sh"), "--timeout", "1s"), code: 3,
			want: []string{"npuverify: check: {id}: ", "timed out after 1s; killed its process group"}},
		{name: "exec/setsid orphan after a clean exit", env: pid, pidfiles: []string{"{dir}/pid"},
			args: runKeep("{kernels}/setsid_orphan.sh"), code: 1, stdout: []string{"z fp16[17]: bound FAIL"}},
		{name: "exec/check: setsid orphans of 3 runs under --repeat", store: vectorCase, env: pid, pidfiles: []string{"{dir}/pid"},
			args: with(checkWith("{kernels}/setsid_orphan.sh"), "--repeat", "3"), code: 1, stdout: []string{"{id}", "FAIL"}},

		// ---- kernels that try to forge a harness line ----
		{name: "exec/stderr with escape codes", args: runWith("{kernels}/stderr_escapes.sh"), code: 3,
			want: []string{"npuverify: run: ", "exited with status 1", `| progress 10%\r\x1b[2K\x1b[1Gnpuverify: run: all outputs verified`, `\x1b]0;title\abell and C1 \u009b too`}},
		{name: "exec/check: stderr with escape codes", store: vectorCase, args: checkWith("{kernels}/stderr_escapes.sh"), code: 3,
			want: []string{"npuverify: check: {id}: ", `| progress 10%\r\x1b[2K\x1b[1Gnpuverify: run: all outputs verified`}},

		// ---- kernels that write into their inputs ----
		{name: "exec/kernel writes into its input", files: map[string][]byte{
			"{dir}/copy.sh":   copyX,
			"{dir}/kernel.sh": sh(`exec {kernels}/clobber_input.sh {dir}/copy.sh "$1"`)},
			args: runKeep("{dir}/kernel.sh"), code: 1, stdout: []string{"inputs-unchanged FAIL"},
			want: []string{`input "x" was modified by the backend: x.npy was written (first difference at element 0: +Inf`}},
		{name: "exec/kernel truncates its input", files: map[string][]byte{
			"{dir}/copy.sh":   copyX,
			"{dir}/kernel.sh": sh(`exec {kernels}/truncate_input.sh {dir}/copy.sh "$1"`)},
			args: runKeep("{dir}/kernel.sh"), code: 1, stdout: []string{"inputs-unchanged FAIL"},
			want: []string{`input "y" was modified by the backend: y.npy was rewritten and no longer reads as fp16[17]`}},
		{name: "exec/check: kernel writes into its input", store: vectorCase, files: map[string][]byte{
			"{dir}/copy.sh":   copyX,
			"{dir}/kernel.sh": sh(`exec {kernels}/clobber_input.sh {dir}/copy.sh "$1"`)},
			args: checkWith("{dir}/kernel.sh"), code: 1, stdout: []string{"{id}", "FAIL", `input "x" was modified by the backend`},
			unchanged: []string{"{store}"}},

		// ---- files the harness reads that are not what they claim ----
		{name: "npy/--in is a FIFO with no writer", fifos: []string{"{dir}/y.npy"},
			args: runY, code: 2, want: with(inY, fifoRefused)},
		{name: "npy/--in linked to /dev/zero", links: map[string]string{"{dir}/y.npy": "/dev/zero"},
			args: runY, code: 2, want: with(inY, linkRefused)},
		{name: "npy/--in is a sparse 3 GiB file", files: map[string][]byte{"{dir}/y.npy": valid17}, sizes: map[string]int64{"{dir}/y.npy": gib3},
			args: runY, code: 2, want: with(inY, "file too large: 3221225472 bytes"), maxAlloc: allocLimit},
		{name: "param/--profile /dev/zero", args: []string{"check", "--profile", "/dev/zero"}, code: 2,
			want: []string{"npuverify: check: --profile /dev/zero: ", "is a character device, not a regular file"}, maxAlloc: allocLimit},
		{name: "param/--profile is a FIFO", fifos: []string{"{dir}/prof.json"}, args: []string{"check", "--profile", "{dir}/prof.json"}, code: 2,
			want: []string{"npuverify: check: --profile {dir}/prof.json: ", fifoRefused}},
		{name: "case.json/is a FIFO", store: vectorCase, remove: []string{"{case}/case.json"}, fifos: []string{"{case}/case.json"},
			args: checkStore, code: 2, want: with(atCase, fifoRefused), verify: []string{"{case}/case.json", fifoRefused}},
		{name: "case.json/symlink to /dev/zero", store: vectorCase, remove: []string{"{case}/case.json"}, links: map[string]string{"{case}/case.json": "/dev/zero"},
			args: checkStore, code: 2, want: with(atCase, linkRefused), verify: []string{"{case}/case.json", linkRefused}},
		{name: "case.json/100 MB", store: vectorCase, sizes: map[string]int64{"{case}/case.json": 100 << 20},
			args: checkStore, code: 2, want: with(atCase, "file too large: 104857600 bytes"), verify: []string{"{case}/case.json", "file too large"}, maxAlloc: allocLimit},
		{name: "case.json/stored input linked to /dev/zero", store: vectorCase, remove: []string{"{case}/x.npy"}, links: map[string]string{"{case}/x.npy": "/dev/zero"},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/x.npy", `tensor "x"`, linkRefused},
			verify: []string{"{case}/x.npy", linkRefused}, maxAlloc: allocLimit},
		{name: "case.json/stored input is a sparse 3 GiB file", store: vectorCase, sizes: map[string]int64{"{case}/x.npy": gib3},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/x.npy", `tensor "x"`, "file too large: 3221225472 bytes"},
			verify: []string{"{case}/x.npy", "file too large"}, maxAlloc: allocLimit},
		{name: "case.json/expected output is a sparse 3 GiB file", store: vectorCase, sizes: map[string]int64{"{case}/expected/z.npy": gib3},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/expected/z.npy", `tensor "z"`, "file too large"},
			verify: []string{"{case}/expected/z.npy", "file too large"}, maxAlloc: allocLimit},
		{name: "case.json/stored input is a FIFO", store: vectorCase, remove: []string{"{case}/y.npy"}, fifos: []string{"{case}/y.npy"},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/y.npy", `tensor "y"`, fifoRefused},
			verify: []string{"{case}/y.npy", fifoRefused}},

		// ---- result files pointed at what is not a regular file ----
		{name: "result/--json at a FIFO", store: vectorCase, fifos: []string{"{dir}/r.json"},
			args: with(checkStore, "--json", "{dir}/r.json"), code: 2,
			want: []string{"npuverify: check: --json: {dir}/r.json: refusing to replace it: it is a FIFO"}, unchanged: []string{"{dir}/r.json"}},
		{name: "result/--junit at a FIFO", store: vectorCase, fifos: []string{"{dir}/r.xml"},
			args: with(checkStore, "--junit", "{dir}/r.xml"), code: 2,
			want: []string{"npuverify: check: --junit: {dir}/r.xml: refusing to replace it: it is a FIFO"}, unchanged: []string{"{dir}/r.xml"}},
		{name: "result/--json at a symlink", store: vectorCase,
			files: map[string][]byte{"{dir}/mine.json": []byte("keep me\n")}, links: map[string]string{"{dir}/r.json": "{dir}/mine.json"},
			args: with(checkStore, "--json", "{dir}/r.json"), code: 2,
			want:      []string{"npuverify: check: --json: {dir}/r.json: refusing to replace it: it is a symbolic link (not followed)"},
			unchanged: []string{"{dir}/mine.json", "{dir}/r.json"}},
		{name: "result/--junit at a symlink to /dev/null", store: vectorCase, links: map[string]string{"{dir}/r.xml": "/dev/null"},
			args: with(checkStore, "--junit", "{dir}/r.xml"), code: 2,
			want: []string{"npuverify: check: --junit: {dir}/r.xml: refusing to replace it: it is a symbolic link"}, unchanged: []string{"{dir}/r.xml"}},
		{name: "result/--json at /dev/full", store: vectorCase,
			args: with(checkStore, "--json", "/dev/full"), code: 2,
			want: []string{"npuverify: check: --json: /dev/full: refusing to replace it: it is a character device"}, unchanged: []string{"/dev/full"}},
		{name: "result/--junit at /dev/null", store: vectorCase,
			args: with(checkStore, "--junit", "/dev/null"), code: 2,
			want: []string{"npuverify: check: --junit: /dev/null: refusing to replace it: it is a character device"}, unchanged: []string{"/dev/null"}},
		{name: "result/--json at a directory", store: vectorCase, files: map[string][]byte{"{dir}/r.json/": nil},
			args: with(checkStore, "--json", "{dir}/r.json"), code: 2,
			want: []string{"npuverify: check: --json: {dir}/r.json: "}, unchanged: []string{"{dir}/r.json"}},

		// ---- check --run, --jobs, --repeat (issue 9) ----
		{name: "check/--run does not compile", args: []string{"check", "--run", "gemm/(fp16"}, code: 2,
			want: []string{`npuverify: check: --run "gemm/(fp16": error parsing regexp: missing closing )`}},
		{name: "check/--run selects nothing", store: vectorCase, args: with(checkStore, "--run", "^gemm/"), code: 2,
			want: []string{"npuverify: check: no cases selected: --run ^gemm/ matches none of the 1 cases in {store}"}},
		{name: "check/--run and --shard select nothing", store: vectorCase, args: with(checkStore, "--run", "fp16", "--shard", "2/2"), code: 2,
			want: []string{"npuverify: check: no cases selected: --shard 2/2 selects none of the 1 cases matching --run fp16 in {store}"}},
		{name: "check/--jobs negative", args: []string{"check", "--jobs", "-4"}, code: 2,
			want: []string{"npuverify: check: --jobs -4: want at least 1 (or 0: the number of CPUs)"}},
		{name: "check/--jobs not a number", args: []string{"check", "--jobs", "all"}, code: 2,
			want: []string{`npuverify: check: invalid value "all" for flag -jobs`}},
		{name: "check/--repeat 0", args: []string{"check", "--repeat", "0"}, code: 2,
			want: []string{"npuverify: check: --repeat 0: want at least 1"}},

		// ---- Bazel test sharding (issue 13) ----
		{name: "check/Bazel shard index out of range", env: bazel("3", "3", ""), args: []string{"check"}, code: 2,
			want: []string{`npuverify: check: Bazel sharding: TEST_SHARD_INDEX="3": want a 0-based shard index below TEST_TOTAL_SHARDS=3`}},
		{name: "check/Bazel shard index missing", env: bazel("", "4", ""), args: []string{"check"}, code: 2,
			want: []string{`npuverify: check: Bazel sharding: TEST_SHARD_INDEX="": want a 0-based shard index below TEST_TOTAL_SHARDS=4`}},
		{name: "check/Bazel shard count not a number", env: bazel("0", "many", ""), args: []string{"check"}, code: 2,
			want: []string{`npuverify: check: Bazel sharding: TEST_TOTAL_SHARDS="many": want a positive shard count`}},
		{name: "check/Bazel status file is a FIFO", store: vectorCase, env: bazel("0", "1", "{dir}/status"), fifos: []string{"{dir}/status"},
			args: checkStore, code: 2, want: []string{"npuverify: check: TEST_SHARD_STATUS_FILE: {dir}/status: not a regular file"},
			unchanged: []string{"{dir}/status"}},
		{name: "check/Bazel status file is a symlink", store: vectorCase, env: bazel("0", "1", "{dir}/status"),
			files: map[string][]byte{"{dir}/mine.txt": []byte("keep me\n")}, links: map[string]string{"{dir}/status": "{dir}/mine.txt"},
			args: checkStore, code: 2, want: []string{"npuverify: check: TEST_SHARD_STATUS_FILE: {dir}/status: is a symbolic link (not followed), not a regular file"},
			unchanged: []string{"{dir}/mine.txt", "{dir}/status"}},
	}
}
