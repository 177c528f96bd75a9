package main

import (
	"strings"

	"github.com/npuverify/npuverify/opdb"
)

// smallBadInputs are the catalogue's entries of issue 33 items 7, 8 and
// 11 and of the new user's paragraph: recipes whose case.json asks for
// more than its tensors (checked before anything is generated, so the
// allocation stays within allocLimit), case.json dims and names the op or
// the directory do not have, a forged recipe output hash blamed on the
// store as well as the emulator, strict --precision, a fault given twice,
// an output that would replace an input, and the exec command-line
// messages a new user meets.
func smallBadInputs() []badInput {
	checkStore := []string{"check", "--golden", "{store}"}
	atCase := []string{"npuverify: check: {id}: ", "{case}/case.json"}
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	runBase := []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{out}"}
	// recipe turns the copied vector_add case into a recipe (case.json
	// alone, every tensor by its sha256) and applies more.
	recipe := func(more func(cj map[string]any)) func(map[string]any) {
		return func(cj map[string]any) {
			cj["recipe"] = true
			for _, key := range []string{"inputs", "outputs"} {
				for _, e := range cj[key].([]any) {
					delete(e.(map[string]any), "file")
				}
			}
			if more != nil {
				more(cj)
			}
		}
	}
	recipeFiles := []string{"{case}/x.npy", "{case}/y.npy", "{case}/expected/z.npy", "{case}/expected"}
	const n28 = 1 << 28
	fault := opdb.Faults()[0].Fault
	return []badInput{
		// ---- item 7: a recipe is capped before it is generated ----
		{name: "small/recipe dims beyond its tensors", store: vectorCase,
			edit: recipe(func(cj map[string]any) { cj["dims"].(map[string]any)["n"] = n28 }), remove: recipeFiles,
			args: checkStore, code: 2, maxAlloc: allocLimit,
			want:   with(atCase, `dims: "n" = 268435456 exceeds every listed tensor`, "the dims do not generate these tensors"),
			verify: []string{`dims: "n" = 268435456 exceeds every listed tensor`}},
		{name: "small/recipe larger than a recipe may be", store: vectorCase,
			edit: recipe(func(cj map[string]any) {
				cj["dims"].(map[string]any)["n"] = n28
				for _, key := range []string{"inputs", "outputs"} {
					for _, e := range cj[key].([]any) {
						e.(map[string]any)["shape"] = []any{n28}
					}
				}
			}), remove: recipeFiles,
			args: checkStore, code: 2, maxAlloc: allocLimit,
			want:   with(atCase, "recipe: its tensors total 1610612736 bytes, more than the 268435456 a recipe may regenerate"),
			verify: []string{"more than the 268435456 a recipe may regenerate"}},

		// ---- item 11: case.json held to its op and its directory ----
		{name: "small/case.json with an unknown dim", store: vectorCase,
			edit: func(cj map[string]any) { cj["dims"].(map[string]any)["m"] = 3 },
			args: checkStore, code: 2,
			want:   with(atCase, `dims: unknown dim "m" for op vector_add (it takes n)`),
			verify: []string{`unknown dim "m" for op vector_add`}},
		{name: "small/case name differs from its directory", store: vectorCase,
			edit: func(cj map[string]any) { cj["name"] = "fp16_uniform_n18" },
			args: checkStore, code: 2,
			want:   with(atCase, "names case vector_add/fp16_uniform_n18, but lives in {id}"),
			verify: []string{"names case vector_add/fp16_uniform_n18, but lives in {id}"}},
		{name: "small/recipe output sha forged", store: vectorCase,
			edit: recipe(func(cj map[string]any) {
				cj["outputs"].([]any)[0].(map[string]any)["sha256"] = strings.Repeat("0", 64)
			}), remove: recipeFiles,
			args: checkStore, code: exitFail, unchanged: []string{"{store}"},
			stdout: []string{"FAIL", "recorded hash mismatch", "case.json was edited or is corrupt, or the emulator regressed"}},

		// ---- item 11: strict sizes ----
		{name: "small/report --precision with trailing junk",
			args: []string{"report", "--precision", "512x512x512junk", "--out", "{dir}/r"}, code: 2,
			want: []string{`npuverify: report: --precision "512x512x512junk": size "512junk": want MxKxN`}, unchanged: []string{"{dir}/r"}},
		{name: "small/report --precision with two sizes",
			args: []string{"report", "--precision", "512x512", "--out", "{dir}/r"}, code: 2,
			want: []string{`npuverify: report: --precision "512x512": want MxKxN with positive sizes`}},

		// ---- item 11: a fault scored once; Bazel's spare shards ----
		{name: "small/mutate --fault given twice",
			args: []string{"mutate", "--fault", string(fault), "--fault", string(fault)}, code: 2,
			want: []string{`npuverify: mutate: --fault "` + string(fault) + `": given more than once`}},
		{name: "small/Bazel shard past the last case", store: vectorCase,
			env:  map[string]string{envShardIndex: "1", envTotalShards: "2", envShardStatus: "{dir}/status"},
			args: checkStore, code: 0, unchanged: []string{"{store}"},
			stdout: []string{"shard 2/2 (from TEST_TOTAL_SHARDS) selects none of the 1 cases: nothing to run, which passes"}},
		{name: "small/--shard by hand past the last case", store: vectorCase, args: with(checkStore, "--shard", "2/2"), code: 2,
			want: []string{"npuverify: check: no cases selected: --shard 2/2 selects none of the 1 cases in {store}"}},

		// ---- a new user's exec command lines and messages ----
		{name: "small/exec at a directory", files: map[string][]byte{"{dir}/kdir/": nil},
			args: with(runBase, "--backend", "exec:{dir}/kdir"), code: 3,
			want: []string{`starting command "{dir}/kdir"`, "(it is a directory, not an executable file)"}},
		{name: "small/exec bare name of a file here",
			args: with(runBase, "--backend", "exec:main.go"), code: 3,
			want: []string{`starting command "main.go"`, "executable file not found in $PATH", "write ./main.go for the file in the current directory"}},
		{name: "small/exec output named as the protocol names it",
			files: map[string][]byte{"{dir}/kernel.sh": sh(`head -c 100 "$1/x.npy" > "$1/out/z.npy"`)},
			args:  with(runBase, "--backend", "exec:{dir}/kernel.sh"), code: 3,
			want: []string{`output "z": out/z.npy: truncated header`}},
	}
}
