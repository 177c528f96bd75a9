package main

// resultsBadInputs are issue 33's result-file situations (item 10 and the
// run half of item 8) that fit the catalogue: each ends in exit 2 or 3
// naming the flag and the file, and none writes a result file in a place
// it must not.
func resultsBadInputs() []badInput {
	checkStore := []string{"check", "--golden", "{store}"}
	with := func(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }
	// ranKernel records that it ran: the entries whose targets are checked
	// before the first case must leave {dir}/ran/ empty.
	ranKernel := sh("touch {dir}/ran/kernel-ran; exit 1")
	return []badInput{
		{name: "results/--json and --junit name one file", store: vectorCase,
			args: with(checkStore, "--json", "{dir}/r", "--junit", "{dir}/./r"), code: 2,
			want:      []string{"npuverify: check: --json {dir}/r and --junit {dir}/./r name the same file"},
			unchanged: []string{"{dir}/r"}},
		{name: "results/--json inside the store under check", store: vectorCase,
			args: with(checkStore, "--json", "{case}/case.json"), code: 2,
			want:      []string{"npuverify: check: --json {case}/case.json: inside the golden store {store} that is being checked"},
			unchanged: []string{"{store}"}},
		{name: "results/--junit inside the store under check", store: vectorCase,
			args: with(checkStore, "--junit", "{store}/r.xml"), code: 2,
			want:      []string{"npuverify: check: --junit {store}/r.xml: inside the golden store"},
			unchanged: []string{"{store}"}},
		{name: "results/--json's directory missing: found before the first case", store: vectorCase,
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil},
			args:  with(checkStore, "--backend", "exec:{dir}/kernel.sh", "--junit", "{dir}/r.xml", "--json", "{dir}/no/r.json"), code: 2,
			want:      []string{"npuverify: check: --json: {dir}/no/r.json: directory", "no such file or directory"},
			unchanged: []string{"{dir}/ran", "{dir}/r.xml"}},
		{name: "results/--junit is a directory: found before the first case", store: vectorCase,
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil, "{dir}/r.xml/": nil},
			args:  with(checkStore, "--backend", "exec:{dir}/kernel.sh", "--junit", "{dir}/r.xml"), code: 2,
			want:      []string{"npuverify: check: --junit: {dir}/r.xml: refusing to replace it: it is a directory"},
			unchanged: []string{"{dir}/ran"}},
		{name: "results/--json's directory vanishes during the run: exit 3 kept, neither file replaced", store: vectorCase,
			files: map[string][]byte{"{dir}/kernel.sh": sh("rm -rf {dir}/res; exit 1"), "{dir}/res/": nil},
			args:  with(checkStore, "--backend", "exec:{dir}/kernel.sh", "--json", "{dir}/res/r.json", "--junit", "{dir}/r.xml"), code: 3,
			want:      []string{"npuverify: check: --json and --junit (neither replaced): {dir}/res/r.json: "},
			unchanged: []string{"{dir}/r.xml"}},
		{name: "results/explore --json's directory missing: found before the first case",
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil},
			args:  []string{"explore", "--op", "vector_add", "--backend", "exec:{dir}/kernel.sh", "--budget", "2s", "--out", "{dir}/found", "--json", "{dir}/no/e.json"}, code: 2,
			want:      []string{"npuverify: explore: --json: {dir}/no/e.json: directory", "no such file or directory"},
			unchanged: []string{"{dir}/ran", "{dir}/found"}},
		{name: "results/run: cost.json is a directory: found before the kernel runs",
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil, "{out}/cost.json/": nil},
			args:  []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{out}", "--backend", "exec:{dir}/kernel.sh"}, code: 2,
			want:      []string{"npuverify: run: --out {out}: {out}/cost.json: refusing to replace it: it is a directory"},
			unchanged: []string{"{dir}/ran", "{out}"}},
		{name: "results/run: --out under a file",
			files: map[string][]byte{"{dir}/kernel.sh": ranKernel, "{dir}/ran/": nil, "{dir}/file": []byte("x")},
			args:  []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{dir}/file/out", "--backend", "exec:{dir}/kernel.sh"}, code: 2,
			want:      []string{"npuverify: run: --out {dir}/file/out: cannot be made: ", "not a directory"},
			unchanged: []string{"{dir}/ran", "{dir}/file"}},
	}
}
