package main

import (
	"encoding/json"

	"github.com/npuverify/npuverify/npu"
)

// traceBadInputs are check --trace DIR's situations (issue 34): each ends
// in exit 2 naming --trace and the path at fault, found before the first
// case where it can be, and none writes a trace in a place it must not
// (the golden store, a result file, through a link).
func traceBadInputs() []badInput {
	checkStore := []string{"check", "--golden", "{store}"}
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	// ranKernel records that it ran: the entries found before the first
	// case must leave {dir}/ran/ empty.
	ranKernel := sh("touch {dir}/ran/kernel-ran; exit 1")
	file := "{dir}/t/" + vectorCase + ".json"
	return []badInput{
		{name: "trace/--trace DIR is a file", store: vectorCase, files: map[string][]byte{"{dir}/t": []byte("x")},
			args: with(checkStore, "--trace", "{dir}/t"), code: 2,
			want:      []string{"npuverify: check: --trace {dir}/t: not a directory"},
			unchanged: []string{"{dir}/t"}},
		{name: "trace/--trace DIR under a file", store: vectorCase, files: map[string][]byte{"{dir}/f": []byte("x")},
			args: with(checkStore, "--trace", "{dir}/f/t"), code: 2,
			want:      []string{"npuverify: check: --trace {dir}/f/t: cannot be made: ", "not a directory"},
			unchanged: []string{"{dir}/f"}},
		{name: "trace/--trace DIR is a character device", store: vectorCase,
			args: with(checkStore, "--trace", "/dev/null"), code: 2,
			want: []string{"npuverify: check: --trace /dev/null: not a directory"}},
		{name: "trace/--trace inside the golden store under check", store: vectorCase,
			args: with(checkStore, "--trace", "{store}/traces"), code: 2,
			want:      []string{"npuverify: check: --trace {store}/traces: inside the golden store {store} that is being checked"},
			unchanged: []string{"{store}"}},
		{name: "trace/--trace is the golden store itself", store: vectorCase,
			args: with(checkStore, "--trace", "{store}"), code: 2,
			want:      []string{"npuverify: check: --trace {store}: inside the golden store"},
			unchanged: []string{"{store}"}},
		{name: "trace/--trace with another backend than the emulator", store: vectorCase,
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil},
			args:  with(checkStore, "--backend", "exec:{dir}/kernel.sh", "--trace", "{dir}/t"), code: 2,
			want:      []string{"npuverify: check: --trace: only the emulator backend has a schedule to trace, not exec:{dir}/kernel.sh"},
			unchanged: []string{"{dir}/ran"}},
		{name: "trace/a case's trace would replace the --json file", store: vectorCase,
			files: map[string][]byte{"{dir}/t/vector_add/": nil},
			args:  with(checkStore, "--trace", "{dir}/t", "--json", file), code: 2,
			want: []string{"npuverify: check: --trace {dir}/t: the trace of {id} would replace the --json file " + file}},
		{name: "trace/a case's trace would replace the --profile file", store: vectorCase,
			files: map[string][]byte{file: profileJSON()},
			args:  with(checkStore, "--trace", "{dir}/t", "--profile", file), code: 2,
			want:      []string{"npuverify: check: --trace {dir}/t: the trace of {id} would replace the --profile file " + file},
			unchanged: []string{file}},
		{name: "trace/a case's trace file is a directory: the case is judged, exit 2", store: vectorCase,
			files: map[string][]byte{file + "/": nil},
			args:  with(checkStore, "--trace", "{dir}/t"), code: 2,
			want:      []string{"npuverify: check: --trace {dir}/t: 1 of 1 traces not written, the first: {id}: " + file + ": refusing to replace it: it is a directory"},
			unchanged: []string{file}},
		{name: "trace/a case's trace file is a symbolic link: not written through", store: vectorCase,
			files: map[string][]byte{"{dir}/victim": []byte("keep"), "{dir}/t/vector_add/": nil},
			links: map[string]string{file: "{dir}/victim"},
			args:  with(checkStore, "--trace", "{dir}/t"), code: 2,
			want:      []string{"npuverify: check: --trace {dir}/t: 1 of 1 traces not written, the first: {id}: " + file + ": refusing to replace it: "},
			unchanged: []string{"{dir}/victim"}},
	}
}

// profileJSON is the ascend910b profile as a --profile file.
func profileJSON() []byte {
	b, err := json.Marshal(npu.Ascend910B())
	if err != nil {
		panic(err)
	}
	return b
}
