package main

import (
	"maps"
	"strconv"
	"strings"
)

// The bad input catalogue (issue 4, item 3): every entry is one malformed
// input driven through the CLI entry point run, and must end in exit code
// 2 (usage or input error) or 3 (backend failure) with a message in the
// form "npuverify: <where>: <what>" that names the file, tensor or
// parameter at fault. No entry may reach a panic, and the entries marked
// with maxAlloc must stay within that many bytes of allocation however
// large the input claims to be.
//
// Placeholders, expanded in args, want, verify and in the names of files
// (and in the content of *.sh files; a name ending in "/" is a directory):
//
//	{dir}    a fresh directory of the entry's own
//	{out}    {dir}/out, the --out directory of run
//	{x} {y}  valid vector_add fp16[17] inputs (shared, read only)
//	{store}  a golden store holding a copy of the entry's case (store)
//	{case}   that case's directory in {store}
//	{id}     that case's ID, "<op>/<name>"
//	{kernels} the absolute path of backend/testdata/kernels
//
// Every entry runs with TMPDIR set to a fresh directory, which must be
// empty afterwards (no exec case directory left behind), and neither
// stdout nor stderr may carry a raw escape (ESC) or carriage return: what
// the harness quotes of a kernel or a path is escaped.

// badInput is one catalogue entry.
type badInput struct {
	name string
	// store is the case copied into {store} before the run: vectorCase,
	// gemmCase, or "" for none.
	store string
	// edit, when set, modifies the copied case's case.json (decoded as
	// generic JSON, re-encoded after the edit).
	edit func(cj map[string]any)
	// files are written before the run: path → content. Files ending in
	// .sh are executable kernels, their content placeholder-expanded.
	files map[string][]byte
	// remove lists paths deleted before the run (after files are written).
	remove []string
	args   []string // the command line after "npuverify"
	code   int      // the wanted exit code: 2 or 3
	want   []string // substrings stderr must contain
	// verify, when set, also runs "golden verify --dir {store}", which
	// must report the problem (exit 1: the store it checks is corrupt)
	// with stderr containing every substring.
	verify []string
	// maxAlloc, when > 0, bounds the bytes allocated (TotalAlloc) during
	// the run.
	maxAlloc uint64
	// noMarker leaves {store} without the store marker (it is written
	// otherwise, like golden update writes it).
	noMarker bool
	// rehash re-records in the copied case.json the sha256 of every listed
	// file the entry wrote, so that the entry reaches the check it is about
	// rather than the hash check.
	rehash bool
	// unchanged lists directories (or files) whose whole tree, names,
	// types and contents, must be the same after the run (and after the
	// verify run) as before it.
	unchanged []string
	// stdout lists substrings stdout must contain (entries exiting 0 or 1
	// are judged by it or by unchanged).
	stdout []string
	// fifos are named pipes made before the run (after remove), links
	// symbolic links (path → target), both placeholder-expanded.
	fifos []string
	links map[string]string
	// sizes extends (or cuts) files to a size after they are written: a
	// sparse file that claims gigabytes and costs nothing on disk.
	sizes map[string]int64
	// env is set for the run (placeholder-expanded), e.g. the $PIDFILE of
	// a testdata kernel or Bazel's sharding variables.
	env map[string]string
	// pidfiles hold the pid of a process a kernel started; after the run
	// every one must be gone (no leak).
	pidfiles []string
}

const (
	vectorCase = "vector_add/fp16_uniform_n17"
	gemmCase   = "gemm/tiny"
	// twoTo40 is the element count of the header that claims 2^40
	// elements: 2 TiB of fp16 data that must never be allocated.
	twoTo40 = "1099511627776"
	// stderrFlood is how much the noisy kernel writes to stderr.
	stderrFlood = 16 << 20
	// allocLimit bounds the allocation of a run whose input claims
	// terabytes (or floods megabytes of stderr): the CLI's own work on a
	// 17-element case is well under 1 MiB, the exec backend keeps a
	// 64 KiB stderr tail; 4 MiB is a quarter of the flood and a millionth
	// of what the 2^40 header claims.
	allocLimit = 4 << 20
)

// npyV1 builds a version 1.0 .npy file from a header dictionary and data,
// padded like numpy pads (64-byte aligned, newline-terminated).
func npyV1(dict string, data []byte) []byte {
	pad := (64 - (10+len(dict)+1)%64) % 64
	h := dict + strings.Repeat(" ", pad) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(append(b, h...), data...)
}

// fp16Dict is the header dictionary of a C-order fp16 array of the given
// shape ("(17,)", "(2, 3)").
func fp16Dict(shape string) string {
	return "{'descr': '<f2', 'fortran_order': False, 'shape': " + shape + ", }"
}

// zeros returns n zero bytes.
func zeros(n int) []byte { return make([]byte, n) }

// sh returns a shell script: a fake kernel.
func sh(script string) []byte { return []byte("#!/bin/sh\n" + script + "\n") }

// badInputCatalogue returns the catalogue.
func badInputCatalogue() []badInput {
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	// The run command on a bad y (x is valid).
	runY := []string{"run", "vector_add", "--in", "x={x}", "--in", "y={dir}/y.npy", "--out", "{out}"}
	inY := []string{"npuverify: run: --in y={dir}/y.npy: ", `tensor "y"`}
	// The run command through the fake kernel {dir}/kernel.sh.
	runK := []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{out}", "--backend", "exec:{dir}/kernel.sh"}
	byK := []string{"npuverify: run: ", "backend exec:{dir}/kernel.sh"}
	outZ := with(byK, `output "z"`, "out/z.npy", "want fp16[17]")
	checkStore := []string{"check", "--golden", "{store}"}
	atCase := []string{"npuverify: check: {id}: ", "{case}/case.json"}
	valid17 := npyV1(fp16Dict("(17,)"), zeros(34))

	return append([]badInput{
		// ---- malformed .npy inputs (run --in) ----
		{name: "npy/empty file", files: map[string][]byte{"{dir}/y.npy": nil},
			args: runY, code: 2, want: with(inY, "empty file: not a .npy file")},
		{name: "npy/bad magic", files: map[string][]byte{"{dir}/y.npy": append([]byte("PK\x03\x04NUMPY"), valid17[10:]...)},
			args: runY, code: 2, want: with(inY, "not a .npy file (magic")},
		{name: "npy/truncated before header length", files: map[string][]byte{"{dir}/y.npy": valid17[:9]},
			args: runY, code: 2, want: with(inY, "truncated header: have 1 of 2 header-length bytes")},
		{name: "npy/truncated header", files: map[string][]byte{"{dir}/y.npy": valid17[:40]},
			args: runY, code: 2, want: with(inY, "truncated header: have 30 bytes, want 118")},
		{name: "npy/unsupported version", files: map[string][]byte{"{dir}/y.npy": append([]byte("\x93NUMPY\x04\x00"), valid17[8:]...)},
			args: runY, code: 2, want: with(inY, "unsupported .npy format version 4.0")},
		{name: "npy/header length 1 GiB", files: map[string][]byte{"{dir}/y.npy": []byte("\x93NUMPY\x02\x00\x00\x00\x00\x40{'descr'")},
			args: runY, code: 2, want: with(inY, "header length 1073741824 exceeds the limit"), maxAlloc: allocLimit},
		{name: "npy/header not a dictionary", files: map[string][]byte{"{dir}/y.npy": npyV1("[17]", zeros(34))},
			args: runY, code: 2, want: with(inY, "header is not a dictionary")},
		{name: "npy/header without shape", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '<f2', 'fortran_order': False}", zeros(34))},
			args: runY, code: 2, want: with(inY, `header is missing key "shape"`)},
		{name: "npy/fortran order", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '<f2', 'fortran_order': True, 'shape': (17,), }", zeros(34))},
			args: runY, code: 2, want: with(inY, "fortran_order arrays are not supported")},
		{name: "npy/unsupported dtype complex64", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '<c8', 'fortran_order': False, 'shape': (17,), }", zeros(136))},
			args: runY, code: 2, want: with(inY, `unsupported descr "<c8"`)},
		{name: "npy/unsupported dtype int64", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '<i8', 'fortran_order': False, 'shape': (17,), }", zeros(136))},
			args: runY, code: 2, want: with(inY, `unsupported descr "<i8"`)},
		{name: "npy/big-endian", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '>f2', 'fortran_order': False, 'shape': (17,), }", zeros(34))},
			args: runY, code: 2, want: with(inY, `big-endian descr ">f2"`)},
		{name: "npy/structured dtype", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': [('a', '<f2')], 'fortran_order': False, 'shape': (17,), }", zeros(34))},
			args: runY, code: 2, want: with(inY, "structured dtypes are not supported")},
		{name: "npy/negative dimension", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(-17,)"), zeros(34))},
			args: runY, code: 2, want: with(inY, "header shape: dimension 0 is negative (-17)")},
		{name: "npy/dimension beyond int64", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(99999999999999999999,)"), zeros(34))},
			args: runY, code: 2, want: with(inY, "dimension 99999999999999999999 is out of range")},
		{name: "npy/header claims 2^40 elements", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("("+twoTo40+",)"), zeros(34))},
			args: runY, code: 2, want: with(inY, "shape ["+twoTo40+"]: more than 268435456 elements"), maxAlloc: allocLimit},
		{name: "npy/header claims 2^20 x 2^20 elements", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(1048576, 1048576)"), zeros(34))},
			args: runY, code: 2, want: with(inY, "more than 268435456 elements"), maxAlloc: allocLimit},
		{name: "npy/header claims 2^28 elements, holds 17", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(268435456,)"), zeros(34))},
			args: runY, code: 2, want: with(inY, "truncated data: have 34 bytes, want 536870912"), maxAlloc: allocLimit},
		{name: "npy/truncated data", files: map[string][]byte{"{dir}/y.npy": valid17[:len(valid17)-6]},
			args: runY, code: 2, want: with(inY, "truncated data: have 28 bytes, want 34")},
		{name: "npy/shape-size mismatch (trailing data)", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(17,)"), zeros(40))},
			args: runY, code: 2, want: with(inY, "trailing data: 6 bytes after the 34 data bytes of the shape")},
		{name: "npy/shape against the contract", files: map[string][]byte{"{dir}/y.npy": npyV1(fp16Dict("(16,)"), zeros(32))},
			args: runY, code: 2, want: with(inY, "shape [16], but vector_add dtype=fp16 wants [17]")},
		{name: "npy/dtype against the contract", files: map[string][]byte{"{dir}/y.npy": npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (17,), }", zeros(68))},
			args: runY, code: 2, want: with(inY, "dtype fp32 ('<f4'), but vector_add dtype=fp16 wants fp16 ('<f2'); nothing is cast")},
		{name: "npy/input is a directory", files: map[string][]byte{"{dir}/y.npy/": nil},
			args: runY, code: 2, want: with(inY, "is a directory")},
		{name: "npy/input does not exist",
			args: runY, code: 2, want: with(inY, "no such file or directory")},

		{name: "npy/gemm inner dimensions disagree", files: map[string][]byte{
			"{dir}/a.npy": npyV1(fp16Dict("(2, 3)"), zeros(12)),
			"{dir}/b.npy": npyV1(fp16Dict("(4, 2)"), zeros(16))},
			args: []string{"run", "gemm", "--in", "a={dir}/a.npy", "--in", "b={dir}/b.npy", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: gemm: ", `inputs "a" [2 3] and "b" [4 2]: inner dimensions differ`}},

		// ---- bad parameters on the command line ----
		{name: "param/gemm unknown mode",
			args: []string{"run", "gemm", "--param", "mode=fp99", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "mode"`, `invalid value "fp99"`}},
		{name: "param/gemm NaN alpha",
			args: []string{"run", "gemm", "--param", "alpha=NaN", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "alpha"`, `must be finite, got "NaN"`}},
		{name: "param/gemm infinite beta",
			args: []string{"run", "gemm", "--param", "beta=-Inf", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "beta"`, "must be finite"}},
		{name: "param/gemm alpha not a number",
			args: []string{"run", "gemm", "--param", "alpha=one", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "alpha"`, `"one" is not a number`}},
		{name: "param/unknown accumulate",
			args: []string{"run", "gemm", "--param", "accumulate=random", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "accumulate"`, `"random"`}},
		{name: "param/unknown policy",
			args: []string{"check", "--policy", "fuzzy"},
			code: 2, want: []string{"npuverify: check: --policy: ", `"fuzzy"`}},
		{name: "param/zero timeout",
			args: with(runK[:len(runK)-2], "--timeout", "0s"),
			code: 2, want: []string{"npuverify: run: --timeout 0s: must be positive"}},

		// ---- malformed case.json (check --golden; golden verify) ----
		{name: "store/not a directory", args: []string{"check", "--golden", "{x}"},
			code: 2, want: []string{"npuverify: check: --golden {x}: ", "not a directory"}},
		{name: "case.json/not JSON", store: vectorCase, files: map[string][]byte{"{case}/case.json": []byte(`{"format": 1, "name": "fp16_uni`)},
			args: checkStore, code: 2, want: with(atCase, "unexpected EOF"), verify: []string{"{case}/case.json", "unexpected EOF"}},
		{name: "case.json/missing op", store: vectorCase, edit: func(m map[string]any) { delete(m, "op") },
			args: checkStore, code: 2, want: with(atCase, `field "op" is missing`), verify: []string{"{case}/case.json", `field "op"`}},
		{name: "case.json/missing format", store: vectorCase, edit: func(m map[string]any) { delete(m, "format") },
			args: checkStore, code: 2, want: with(atCase, "format 0, want 1"), verify: []string{"{case}/case.json", "format 0"}},
		{name: "case.json/missing inputs", store: vectorCase, edit: func(m map[string]any) { delete(m, "inputs") },
			args: checkStore, code: 2, want: with(atCase, `inputs: vector_add: input "x" is missing`), verify: []string{"{case}/case.json", `input "x"`}},
		{name: "case.json/missing outputs", store: vectorCase, edit: func(m map[string]any) { delete(m, "outputs") },
			args: checkStore, code: 2, want: with(atCase, `outputs: vector_add: output "z" is missing`), verify: []string{"{case}/case.json", `output "z"`}},
		{name: "case.json/input against the contract", store: vectorCase, rehash: true, edit: func(m map[string]any) { entry(m, "inputs", 1)["shape"] = []any{16} },
			files: map[string][]byte{"{case}/y.npy": npyV1(fp16Dict("(16,)"), zeros(32))},
			args:  checkStore, code: 2, want: with(atCase, `inputs: vector_add: input "y": shape [16], want [17]`), verify: []string{"{case}/y.npy", `input "y" is fp16[16], the contract says fp16[17]`}},
		{name: "case.json/output against the contract", store: vectorCase, rehash: true, edit: func(m map[string]any) { entry(m, "outputs", 0)["shape"] = []any{16} },
			files: map[string][]byte{"{case}/expected/z.npy": npyV1(fp16Dict("(16,)"), zeros(32))},
			args:  checkStore, code: 2, want: with(atCase, `outputs: vector_add: output "z": shape [16], want [17]`), verify: []string{"{case}/expected/z.npy", `output "z" is fp16[16]`}},
		{name: "case.json/output the op does not have", store: vectorCase, edit: func(m map[string]any) {
			extra := maps.Clone(entry(m, "outputs", 0))
			extra["name"] = "w"
			m["outputs"] = append(m["outputs"].([]any), extra)
		},
			args: checkStore, code: 2, want: with(atCase, `outputs: vector_add: unknown output "w"`), verify: []string{"{case}/expected/z.npy", `output "w" is not in the vector_add contract`}},
		{name: "case.json/unknown field", store: vectorCase, edit: func(m map[string]any) { m["tolerance"] = 0.01 },
			args: checkStore, code: 2, want: with(atCase, `unknown field "tolerance"`), verify: []string{"{case}/case.json", "tolerance"}},
		{name: "case.json/negative dims", store: vectorCase, edit: func(m map[string]any) { m["dims"] = map[string]any{"n": -17} },
			args: checkStore, code: 2, want: with(atCase, `dims: "n" = -17 is negative`), verify: []string{"{case}/case.json", `"n" = -17`}},
		{name: "case.json/negative shape", store: vectorCase, edit: func(m map[string]any) { entry(m, "inputs", 0)["shape"] = []any{-17} },
			args: checkStore, code: 2, want: with(atCase, `tensor entry "x"`, "dimension 0 is negative"), verify: []string{"{case}/case.json", `tensor entry "x"`}},
		{name: "case.json/unknown op", store: vectorCase, edit: func(m map[string]any) { m["op"] = "vector_mul" },
			args: checkStore, code: 2, want: with(atCase, `unknown op "vector_mul"`), verify: []string{"{case}/case.json", "vector_mul"}},
		{name: "case.json/unknown dtype param", store: vectorCase, edit: func(m map[string]any) { m["params"] = map[string]any{"dtype": "fp8"} },
			args: checkStore, code: 2, want: with(atCase, `param "dtype"`, `"fp8"`), verify: []string{"{case}/case.json", `param "dtype"`}},
		{name: "case.json/gemm unknown mode", store: gemmCase, edit: func(m map[string]any) { param(m)["mode"] = "fp99" },
			args: checkStore, code: 2, want: with(atCase, `param "mode"`, `"fp99"`), verify: []string{"{case}/case.json", `param "mode"`}},
		{name: "case.json/gemm NaN alpha", store: gemmCase, edit: func(m map[string]any) { param(m)["alpha"] = "NaN" },
			args: checkStore, code: 2, want: with(atCase, `param "alpha"`, `must be finite, got "NaN"`), verify: []string{"{case}/case.json", `param "alpha"`}},
		{name: "case.json/gemm unknown param", store: gemmCase, edit: func(m map[string]any) { param(m)["gamma"] = "2" },
			args: checkStore, code: 2, want: with(atCase, `unknown param "gamma"`), verify: []string{"{case}/case.json", `"gamma"`}},
		{name: "case.json/unknown policy", store: vectorCase, edit: func(m map[string]any) { m["policy"] = "fuzzy" },
			args: checkStore, code: 2, want: with(atCase, "policy: ", `"fuzzy"`), verify: []string{"{case}/case.json", `"fuzzy"`}},
		{name: "case.json/unknown dtype", store: vectorCase, edit: func(m map[string]any) { entry(m, "inputs", 1)["dtype"] = "fp8" },
			args: checkStore, code: 2, want: with(atCase, `"fp8"`), verify: []string{"{case}/case.json", `"fp8"`}},
		{name: "case.json/file outside the case", store: vectorCase, edit: func(m map[string]any) { entry(m, "inputs", 0)["file"] = "../../x.npy" },
			args: checkStore, code: 2, want: with(atCase, `tensor entry "x": invalid file "../../x.npy"`), verify: []string{"{case}/case.json", "../../x.npy"}},
		{name: "case.json/listed file missing", store: vectorCase, remove: []string{"{case}/y.npy"},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/y.npy", `tensor "y"`, "no such file"}, verify: []string{"{case}/y.npy", "no such file"}},
		{name: "case.json/shape disagrees with the file", store: vectorCase, edit: func(m map[string]any) { entry(m, "inputs", 1)["shape"] = []any{16} },
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/y.npy", `tensor "y"`, "shape [17], case.json says [16]"}, verify: []string{"{case}/y.npy", "case.json says [16]"}},
		{name: "case.json/dtype disagrees with the file", store: vectorCase, edit: func(m map[string]any) { entry(m, "inputs", 1)["dtype"] = "fp32" },
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/y.npy", `tensor "y"`, "dtype mismatch"}, verify: []string{"{case}/y.npy", "dtype mismatch"}},
		{name: "case.json/stored input with bad magic", store: vectorCase, files: map[string][]byte{"{case}/x.npy": []byte("not an array at all")},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/x.npy", `tensor "x"`, "not a .npy file"}, verify: []string{"{case}/x.npy", "not a .npy file"}},
		{name: "case.json/stored input claims 2^40 elements", store: vectorCase, files: map[string][]byte{"{case}/x.npy": npyV1(fp16Dict("("+twoTo40+",)"), zeros(34))},
			args: checkStore, code: 2, want: []string{"npuverify: check: {id}: ", "{case}/x.npy", `tensor "x"`, "more than"}, verify: []string{"{case}/x.npy", "more than"}, maxAlloc: allocLimit},

		// ---- exec backend faults (run and check --backend exec:) ----
		{name: "exec/non-zero exit", files: map[string][]byte{"{dir}/kernel.sh": sh("echo 'kernel: aicore exception at 0x40' >&2\nexit 7")},
			args: runK, code: 3, want: with(byK, "exited with status 7", "stderr (", "aicore exception at 0x40")},
		{name: "exec/killed by a signal", files: map[string][]byte{"{dir}/kernel.sh": sh("echo dying >&2\nkill -9 $$")},
			args: runK, code: 3, want: with(byK, "terminated", "killed", "dying")},
		{name: "exec/timeout", files: map[string][]byte{"{dir}/kernel.sh": sh("echo 'started' >&2\nsleep 30")},
			args: with(runK, "--timeout", "1s"), code: 3, want: with(byK, "timed out after 1s; killed its process group", "started")},
		{name: "exec/background child keeps stderr open", files: map[string][]byte{"{dir}/kernel.sh": sh("(sleep 30 >&2 &)\necho 'left a child behind' >&2")},
			args: runK, code: 3, want: with(outZ, "was not written", "left a child behind")},
		{name: "exec/missing output", files: map[string][]byte{"{dir}/kernel.sh": sh("echo 'nothing to do' >&2")},
			args: runK, code: 3, want: with(outZ, "was not written", "nothing to do")},
		{name: "exec/wrong dtype", files: map[string][]byte{
			"{dir}/z.npy":     npyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (17,), }", zeros(68)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, `dtype mismatch: file has descr "<f4"`)},
		{name: "exec/wrong shape", files: map[string][]byte{
			"{dir}/z.npy":     npyV1(fp16Dict("(16,)"), zeros(32)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "has shape [16]")},
		{name: "exec/output larger than the contract", files: map[string][]byte{
			"{dir}/z.npy":     npyV1(fp16Dict("(18,)"), zeros(36)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "shape [18]: more than 17 elements")},
		{name: "exec/output claims 2^40 elements", files: map[string][]byte{
			"{dir}/z.npy":     npyV1(fp16Dict("("+twoTo40+",)"), zeros(34)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "more than 17 elements"), maxAlloc: allocLimit},
		{name: "exec/output truncated", files: map[string][]byte{
			"{dir}/z.npy":     valid17[:len(valid17)-2],
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "truncated data: have 32 bytes, want 34")},
		{name: "exec/output not .npy", files: map[string][]byte{"{dir}/kernel.sh": sh(`echo "0.5 0.25" > "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "not a .npy file")},
		{name: "exec/output path is a directory", files: map[string][]byte{"{dir}/kernel.sh": sh(`mkdir "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "is a directory")},
		{name: "exec/output is a fifo", files: map[string][]byte{"{dir}/kernel.sh": sh(`mkfifo "$1/out/z.npy"`)},
			args: runK, code: 3, want: with(outZ, "is not a regular file")},
		{name: "exec/malformed timing.json", files: map[string][]byte{
			"{dir}/kernel.sh": sh(`cp "$1/x.npy" "$1/out/z.npy"` + "\n" + `echo '{"kernel_ns": "fast"}' > "$1/out/timing.json"`)},
			args: runK, code: 3, want: with(byK, "out/timing.json", "kernel_ns")},
		{name: "exec/megabytes of stderr", files: map[string][]byte{
			"{dir}/kernel.sh": sh("head -c " + strconv.Itoa(stderrFlood) + " /dev/zero | tr '\\0' 'e' >&2\necho ' last words' >&2\nexit 1")},
			args: runK, code: 3, want: with(byK, "exited with status 1", "stderr ("+strconv.Itoa(stderrFlood+12)+" bytes, last", "last words"), maxAlloc: allocLimit},
		{name: "exec/megabytes of stdout", files: map[string][]byte{
			"{dir}/kernel.sh": sh("head -c " + strconv.Itoa(stderrFlood) + " /dev/zero | tr '\\0' 'o'\nexit 1")},
			args: runK, code: 3, want: with(byK, "exited with status 1", "stdout (stderr was empty) ("+strconv.Itoa(stderrFlood)+" bytes, last"), maxAlloc: allocLimit},
		{name: "exec/command not found",
			args: with(runK[:len(runK)-2], "--backend", "exec:{dir}/no-such-kernel --fast"),
			code: 3, want: []string{"npuverify: run: ", "backend exec:{dir}/no-such-kernel --fast", `starting command "{dir}/no-such-kernel"`, "no such file or directory"}},
		{name: "exec/command not executable", files: map[string][]byte{"{dir}/kernel": []byte("#!/bin/sh\nexit 0\n")},
			args: with(runK[:len(runK)-2], "--backend", "exec:{dir}/kernel"),
			code: 3, want: []string{"npuverify: run: ", `starting command "{dir}/kernel"`, "permission denied"}},
		{name: "exec/unbalanced command line",
			args: with(runK[:len(runK)-2], "--backend", "exec:'{dir}/kernel.sh"),
			code: 2, want: []string{"npuverify: run: --backend exec:'{dir}/kernel.sh: ", "unterminated single quote"}},
		{name: "exec/check: non-zero exit", store: vectorCase, files: map[string][]byte{"{dir}/kernel.sh": sh("echo 'no device' >&2\nexit 3")},
			args: with(checkStore, "--backend", "exec:{dir}/kernel.sh"), code: 3,
			want: []string{"npuverify: check: {id}: ", "backend exec:{dir}/kernel.sh", "exited with status 3", "no device"}},
		{name: "exec/check: wrong shape", store: vectorCase, files: map[string][]byte{
			"{dir}/z.npy":     npyV1(fp16Dict("(2, 17)"), zeros(68)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: with(checkStore, "--backend", "exec:{dir}/kernel.sh"), code: 3,
			want: []string{"npuverify: check: {id}: ", "backend exec:{dir}/kernel.sh", `output "z"`, "more than 17 elements"}},
		{name: "exec/check: timeout", store: vectorCase, files: map[string][]byte{"{dir}/kernel.sh": sh("sleep 30")},
			args: with(checkStore, "--backend", "exec:{dir}/kernel.sh", "--timeout", "1s"), code: 3,
			want: []string{"npuverify: check: {id}: ", "backend exec:{dir}/kernel.sh", "timed out after 1s; killed its process group"}},
	}, append(append(append(append(append(append(append(storeBadInputs(), deviceBadInputs()...), execBadInputs()...), mergeBadInputs()...), smallBadInputs()...), transdataBadInputs()...), resultsBadInputs()...), traceBadInputs()...)...)
}
