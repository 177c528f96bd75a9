package report_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Package report renders; the experiments whose tables it renders run in
// package experiments. Were report to link the emulated kernels, their
// records or the emulator backend, every program that only renders (a
// report merged from the results of real kernels) would carry the
// emulated device, and the renderer could start computing what it should
// be handed. The failure names the chain of imports that brings the
// package in, so the import to remove is its second link.
func TestReportLinksNoImplementation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	const mod = "github.com/npuverify/npuverify/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", mod+"report").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./report: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	if _, ok := imports[mod+"tensor"]; !ok {
		t.Fatalf("go list -deps ./report lacks tensor: the test does not see report's dependencies\n%s", out)
	}
	for _, f := range []string{"npu/kernels", "opdb", "backend/emulator"} {
		if _, ok := imports[mod+f]; !ok {
			continue
		}
		chain := importChain(imports, mod+"report", mod+f)
		for i := range chain {
			chain[i] = strings.TrimPrefix(chain[i], mod)
		}
		t.Errorf("go list -deps ./report contains %s, which report must not link: %s; remove report's import of %s "+
			"(report renders, package experiments runs the studies)", f, strings.Join(chain, " → "), chain[1])
	}
}

// importChain is a shortest chain of imports from one package to another
// (breadth first over imports), both included; the target must be
// reachable.
func importChain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			break
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	var chain []string
	for p := to; p != ""; p = prev[p] {
		chain = append(chain, p)
	}
	slices.Reverse(chain)
	return chain
}
