package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/golden"
)

// A golden recipe (case.json with hashes, no .npy) through the CLI: it
// checks and verifies; an input whose recorded sha256 the regenerated
// input does not have is exit 2 naming the input and the case; an expected
// output the emulator no longer reproduces is exit 1, an emulator
// regression under exact.
func TestCheckRecipe(t *testing.T) {
	const id = "vector_add/fp16_uniform_n1000"
	c, ok := golden.Embedded().Lookup(id)
	if !ok || c.File == nil || !c.File.Recipe {
		t.Fatalf("%s is not a recipe of the embedded store", id)
	}
	sum := map[string]string{}
	for _, e := range append(c.File.Inputs, c.File.Outputs...) {
		sum[e.Name] = e.SHA256
	}
	edit := func(store, old, new string) {
		t.Helper()
		p := filepath.Join(store, filepath.FromSlash(id), golden.CaseJSON)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := copyCases(t, id)
	wantCLI(t, 0, []string{id, "pass", "bound+exact"}, "check", "--golden", store)
	wantCLI(t, 0, []string{"1 cases OK"}, "golden", "verify", "--dir", store)

	bad := strings.Repeat("0", 64)
	edit(store, sum["x"], bad)
	wantCLI(t, 2, []string{"npuverify: check: " + id + ": ", `recipe input "x" of case ` + id, "case.json says " + bad}, "check", "--golden", store)
	wantCLI(t, 1, []string{"npuverify: golden verify: ", `recipe input "x"`}, "golden", "verify", "--dir", store)

	edit(store, bad, sum["x"])
	edit(store, sum["z"], bad)
	o, _ := wantCLI(t, 1, nil, "check", "--golden", store)
	for _, s := range []string{"FAIL", "policy exact", "recorded hash mismatch", "case.json was edited or is corrupt", "or the emulator regressed", `recipe output "z" of case ` + id} {
		if !strings.Contains(o, s) {
			t.Errorf("check output lacks %q:\n%s", s, o)
		}
	}
}
