package main

import (
	"fmt"
	"strconv"

	"github.com/npuverify/npuverify/golden"
)

// storeBadInputs are the catalogue's entries of issue 8 on the golden
// store (points 1, 2, 3 and 7) and its small items (point 10): a command
// pointed at a directory that is not a store, a store with the leftovers
// of a crashed update, a corrupted input, filters that select nothing, and
// command lines that used to be accepted or misreported.
func storeBadInputs() []badInput {
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	checkStore := []string{"check", "--golden", "{store}"}
	notStore := "is not an npuverify golden store (no .npuverify-store marker)"
	// A source tree: what golden update --dir must never touch.
	tree := map[string][]byte{
		"{dir}/tree/src/app/main.c":        []byte("int main(void) { return 0; }\n"),
		"{dir}/tree/src/lib/lib.c":         []byte("int f(void) { return 1; }\n"),
		"{dir}/tree/docs/guide/index.md":   []byte("# Guide\n"),
		"{dir}/tree/vector_add/readme.txt": []byte("an op-named directory that holds no case\n"),
	}
	// Leftovers of an interrupted update, as recovery would find them.
	leftovers := map[string][]byte{
		"{store}/vector_add/.tmp-fp16_uniform_n17/x.npy":         []byte("half-written"),
		"{store}/vector_add/.del-fp16_uniform_n15/case.json":     []byte("{}"),
		"{store}/vector_add/.old-fp16_uniform_n33/case.json":     []byte("{}"),
		"{store}/vector_add/.old-fp16_uniform_n17/expected/z":    []byte("old"),
		"{store}/vector_add/.tmp-int8_uniform_n1/expected/z.npy": nil,
	}
	valid17 := npyV1(fp16Dict("(17,)"), zeros(34))
	// x + 0 = x exactly: a kernel that copies x to z passes any case whose
	// y is all zeros.
	copyX := sh(`cp "$1/x.npy" "$1/out/z.npy"`)
	return []badInput{
		// ---- point 1: only a marked store is touched ----
		{name: "store/update on a source tree", files: tree,
			args: []string{"golden", "update", "--dir", "{dir}/tree"}, code: 2,
			want:      []string{"npuverify: golden update: {dir}/tree " + notStore, "refusing to write to it"},
			unchanged: []string{"{dir}/tree"}},
		{name: "store/update on a file", files: map[string][]byte{"{dir}/file.txt": []byte("not a directory\n")},
			args: []string{"golden", "update", "--dir", "{dir}/file.txt"}, code: 2,
			want: []string{"npuverify: golden update: {dir}/file.txt: not a directory"}, unchanged: []string{"{dir}/file.txt"}},
		{name: "store/update replaces no directory it does not recognise", store: vectorCase,
			files: map[string][]byte{"{store}/vector_add/fp16_uniform_n15/notes.txt": []byte("mine\n")},
			args:  []string{"golden", "update", "--dir", "{store}"}, code: 2,
			want:      []string{"npuverify: golden update: {store}/vector_add/fp16_uniform_n15 exists but is not a case", "refusing to replace it"},
			unchanged: []string{"{store}"}},
		{name: "store/check without the marker", store: vectorCase, noMarker: true,
			args: checkStore, code: 2, want: []string{"npuverify: check: --golden {store}: {store} " + notStore},
			unchanged: []string{"{store}"}},
		{name: "store/verify without the marker", store: vectorCase, noMarker: true,
			args: []string{"golden", "verify", "--dir", "{store}"}, code: 2, want: []string{"npuverify: golden verify: --dir {store}: {store} " + notStore},
			unchanged: []string{"{store}"}},
		{name: "store/check a source tree", files: tree,
			args: []string{"check", "--golden", "{dir}/tree"}, code: 2, want: []string{"npuverify: check: --golden {dir}/tree: {dir}/tree " + notStore},
			unchanged: []string{"{dir}/tree"}},
		{name: "store/marker of another format", store: vectorCase, noMarker: true,
			files: map[string][]byte{"{store}/.npuverify-store": []byte(`{"format":2,"kind":"npuverify golden store"}`)},
			args:  checkStore, code: 2, want: []string{"npuverify: check: --golden {store}: ", "{store}/.npuverify-store: format 2, this npuverify reads format 1"}},
		{name: "store/marker is not one", store: vectorCase, noMarker: true,
			files: map[string][]byte{"{store}/.npuverify-store": []byte("# my notes\n")},
			args:  checkStore, code: 2, want: []string{"npuverify: check: --golden {store}: ", "{store}/.npuverify-store: not a store marker"}},
		{name: "store/marker is a directory", store: vectorCase, noMarker: true,
			files: map[string][]byte{"{store}/.npuverify-store/": nil},
			args:  checkStore, code: 2, want: []string{"npuverify: check: --golden {store}: ", "{store}/.npuverify-store", "not a store marker"}},
		{name: "store/empty marker in a store with cases", store: vectorCase, noMarker: true,
			files: map[string][]byte{"{store}/.npuverify-store": nil},
			args:  []string{"golden", "update", "--dir", "{store}"}, code: 2,
			want: []string{"npuverify: golden update: {store} " + notStore, "the marker is empty"}, unchanged: []string{"{store}"}},

		// ---- point 2: readers never modify the store ----
		{name: "store/check on the leftovers of a crashed update", store: vectorCase, files: leftovers,
			args: checkStore, code: 0, stdout: []string{"1 cases: 1 pass"},
			verify:    []string{"{store}/vector_add/.tmp-fp16_uniform_n17: stray entry", "{store}/vector_add/.old-fp16_uniform_n33: stray entry"},
			unchanged: []string{"{store}"}},

		// ---- point 7: silent passes ----
		{name: "store/input does not match its sha256", store: vectorCase,
			files: map[string][]byte{"{case}/y.npy": valid17, "{dir}/kernel.sh": copyX},
			args:  with(checkStore, "--backend", "exec:{dir}/kernel.sh"), code: 2,
			want:   []string{"npuverify: check: {id}: ", "{case}/y.npy", `tensor "y": sha256 `, "case.json says", "(file modified or corrupted)"},
			verify: []string{"{case}/y.npy", "sha256"}},
		{name: "check/empty store", files: map[string][]byte{"{dir}/store/.npuverify-store": []byte(storeMarker)},
			args: []string{"check", "--golden", "{dir}/store"}, code: 2,
			want: []string{"npuverify: check: no cases selected: store {dir}/store holds no cases"}},
		{name: "check/--op selects nothing", store: vectorCase,
			args: with(checkStore, "--op", "gemm"), code: 2,
			want: []string{"npuverify: check: no cases selected: --op gemm matches none of the 1 cases in {store}"}},
		{name: "check/--shard selects nothing", args: []string{"check", "--shard", "900/1000"}, code: 2,
			want: []string{fmt.Sprintf("npuverify: check: no cases selected: --shard 900/1000 selects none of the %d cases in embedded golden/cases", len(golden.Embedded().Cases()))}},
		{name: "check/--op and --shard select nothing", store: vectorCase,
			args: with(checkStore, "--op", "vector_add", "--shard", "2/2"), code: 2,
			want: []string{"npuverify: check: no cases selected: --shard 2/2 selects none of the 1 cases of --op vector_add in {store}"}},

		// ---- point 10: small items ----
		{name: "exec/empty quoted command", args: []string{"check", "--backend", "exec:''"}, code: 2,
			want: []string{"npuverify: check: --backend exec:'': ", "empty command name"}},
		{name: "exec/empty command", args: []string{"check", "--backend", "exec:"}, code: 2,
			want: []string{"npuverify: check: --backend exec:: ", "no command"}},
		{name: "param/--shard not a fraction", args: []string{"check", "--shard", "x"}, code: 2,
			want: []string{`npuverify: check: --shard "x": want I/N with 1 ≤ I ≤ N`}},
		{name: "param/--shard 0 of 4", args: []string{"check", "--shard", "0/4"}, code: 2,
			want: []string{`npuverify: check: --shard "0/4": want I/N with 1 ≤ I ≤ N`}},
		{name: "param/--shard beyond its count", args: []string{"check", "--shard", "5/4"}, code: 2,
			want: []string{`npuverify: check: --shard "5/4": want I/N with 1 ≤ I ≤ N`}},
		{name: "param/--shard without a value", args: []string{"check", "--shard"}, code: 2,
			want: []string{"npuverify: check: flag needs an argument: -shard"}},
		{name: "param/gemm alpha with a digit separator",
			args: []string{"run", "gemm", "--param", "alpha=1_0", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "alpha"`, `"1_0" is not a number (no '_' digit separators)`}},
		{name: "param/gemm beta with a digit separator",
			args: []string{"run", "gemm", "--param", "beta=0.2_5", "--in", "a={x}", "--out", "{out}"},
			code: 2, want: []string{"npuverify: run: --param: gemm: ", `param "beta"`, `"0.2_5" is not a number`}},
		{name: "npy/x and y of different lengths", files: map[string][]byte{"{dir}/x.npy": npyV1(fp16Dict("(16,)"), zeros(32))},
			args: []string{"run", "vector_add", "--in", "x={dir}/x.npy", "--in", "y={y}", "--out", "{out}"}, code: 2,
			want: []string{"npuverify: run: --in y={y}: ", `tensor "y": shape [17], but vector_add dtype=fp16 wants [16]`, `"y" must have the same shape as "x" [16]`}},
		{name: "exec/all-NaN output", files: map[string][]byte{
			"{dir}/z.npy":     npyV1(fp16Dict("(17,)"), nanFP16(17)),
			"{dir}/kernel.sh": sh(`cp {dir}/z.npy "$1/out/z.npy"`)},
			args: []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{dir}/res", "--backend", "exec:{dir}/kernel.sh"},
			code: 1, stdout: []string{"z fp16[17]: bound FAIL", "max abs — (none of the " + strconv.Itoa(17) + " elements is finite in both output and reference)"}},
	}
}

// nanFP16 returns n fp16 quiet NaNs (0x7e00), little-endian.
func nanFP16(n int) []byte {
	b := make([]byte, 2*n)
	for i := 1; i < len(b); i += 2 {
		b[i] = 0x7e
	}
	return b
}
