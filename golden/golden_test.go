package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// update regenerates the checked-in golden set: go test ./golden/... -update
// (or make golden). Only this package defines the flag.
var update = flag.Bool("update", false, "regenerate golden/cases from DefaultCases with the emulator")

func newEmulator() backend.Backend { return recorder() }

// recorder is the backend the store is recorded by.
func recorder() *emulator.Emulator { return emulator.New(npu.Ascend910B()) }

// TestUpdateGolden regenerates golden/cases with -update; without it, it
// checks that the checked-in set is exactly the default case list (same
// names, params, dims, dist, seed, labels, policy, numerics), so a change
// to DefaultCases without `make golden` fails here.
func TestUpdateGolden(t *testing.T) {
	if *update {
		ch, err := Update(context.Background(), "cases", newEmulator(), opdb.GoldenCases(), os.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("golden/cases: %s", ch)
		return
	}
	s, err := openT(t, "cases")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ops.Case{}
	for _, c := range opdb.GoldenCases() {
		want[c.Op+"/"+c.Name] = c
	}
	got := map[string]*StoredCase{}
	for _, c := range s.Cases() {
		got[c.ID] = c
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		c, ok := got[id]
		if !ok {
			t.Errorf("%s: in DefaultCases but not in golden/cases: run `make golden`", id)
			continue
		}
		if c.Err != nil {
			t.Errorf("%s: %v", id, c.Err)
			continue
		}
		w := want[id]
		h := c.File.Harness()
		pc, err := harness.Prepare(w)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		w.Params = pc.Params
		if w.Policy == "" {
			w.Policy = "bound"
		}
		if !reflect.DeepEqual(h, w) {
			t.Errorf("%s: golden/cases has\n\t%+v\nDefaultCases says\n\t%+v\nrun `make golden`", id, h, w)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: in golden/cases but not in DefaultCases: run `make golden`", id)
		}
	}
}

// TestDefaultNames: default case names are unique and usable as
// directory names.
func TestDefaultNames(t *testing.T) {
	names := map[string]bool{}
	for _, c := range opdb.GoldenCases() {
		id := c.Op + "/" + c.Name
		if names[id] {
			t.Errorf("duplicate default case %s", id)
		}
		names[id] = true
		if !validName(c.Name) {
			t.Errorf("invalid case name %q", c.Name)
		}
	}
}

func TestEmbeddedVerify(t *testing.T) {
	s := Embedded().WithRecorder(recorder())
	if len(s.Cases()) == 0 {
		t.Fatal("embedded store is empty")
	}
	for _, err := range Verify(s) {
		t.Error(err)
	}
}

func TestCheckEmbeddedEmulator(t *testing.T) {
	rs, err := Check(context.Background(), Embedded(), newEmulator(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(Embedded().Cases()) {
		t.Fatalf("%d results for %d cases", len(rs), len(Embedded().Cases()))
	}
	stored := map[string]*StoredCase{}
	for _, c := range Embedded().Cases() {
		stored[c.ID] = c
	}
	for i := range rs {
		r := &rs[i]
		if !r.Pass() {
			t.Errorf("%s", r.Failure())
			continue
		}
		// The recorded metrics are the emulator's: a change to a
		// reference, a bound or a metric that moves them must re-record
		// them (make golden), so that golden diffs and reports read from
		// the store say what the code computes.
		for _, o := range r.Result.Verify.Outputs {
			got, _ := json.Marshal(summarize(o.Metrics))
			want, _ := json.Marshal(stored[r.ID].File.Metrics[o.Name])
			if !bytes.Equal(got, want) {
				t.Errorf("%s: output %q: metrics %s, recorded %s: run `make golden`", r.ID, o.Name, got, want)
			}
		}
		if !slices.Contains(r.Policies, "exact") {
			t.Errorf("%s: emulator not held to the stored bits (policies %v)", r.ID, r.Policies)
		}
		if m := r.Result.Measurement; m == nil || m.Model == nil || len(r.Checks) != 2 {
			t.Errorf("%s: budgets not checked: measurement %+v, checks %v", r.ID, m, r.Checks)
		}
	}
}

// smallCases is a quick set for the update tests: n ≤ 33.
func smallCases(seedShift uint64, names ...string) []ops.Case {
	all := map[string]ops.Case{}
	for _, c := range opdb.GoldenCases() {
		if c.Op == "vector_add" && c.Dims["n"] <= 33 && c.Numerics == nil {
			c.Seed += seedShift
			all[c.Name] = c
		}
	}
	var out []ops.Case
	for _, n := range names {
		c, ok := all[n]
		if !ok {
			panic("no small case " + n)
		}
		out = append(out, c)
	}
	return out
}

func TestUpdateReportsChanges(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var out bytes.Buffer
	old := smallCases(0, "fp16_uniform_n15", "fp16_uniform_n16", "fp32_uniform_n17")
	ch, err := Update(ctx, dir, newEmulator(), old, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Added) != 3 || ch.Unchanged != 0 {
		t.Fatalf("first update: %s\n%s", ch, out.String())
	}
	out.Reset()
	if ch, err = Update(ctx, dir, newEmulator(), old, &out); err != nil || !ch.Empty() || ch.Unchanged != 3 {
		t.Fatalf("second update: %s, %v\n%s", ch, err, out.String())
	}
	// Change one seed, drop one case, add one.
	cur := smallCases(0, "fp16_uniform_n15", "fp32_uniform_n17", "int8_uniform_n1")
	cur[1].Seed++
	out.Reset()
	ch, err = Update(ctx, dir, newEmulator(), cur, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := Changes{Added: []string{"vector_add/int8_uniform_n1"}, Removed: []string{"vector_add/fp16_uniform_n16"},
		Changed: []string{"vector_add/fp32_uniform_n17"}, Unchanged: 1}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("changes %+v, want %+v", ch, want)
	}
	text := out.String()
	for _, s := range []string{
		"added    vector_add/int8_uniform_n1", "removed  vector_add/fp16_uniform_n16",
		"changed  vector_add/fp32_uniform_n17", "~ x.npy sha256 ", "~ expected/z.npy sha256 ", "seed: ", "metrics z: ",
		"1 added, 1 removed, 1 changed, 1 unchanged",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("update output lacks %q:\n%s", s, text)
		}
	}
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range Verify(s) {
		t.Error(err)
	}
	if ids := caseIDs(s); !slices.Equal(ids, []string{"vector_add/fp16_uniform_n15", "vector_add/fp32_uniform_n17", "vector_add/int8_uniform_n1"}) {
		t.Errorf("cases after update: %v", ids)
	}
}

func TestUpdateRefusesFailingBackend(t *testing.T) {
	dir := t.TempDir()
	cases := smallCases(0, "fp16_uniform_n17")
	_, err := Update(context.Background(), dir, offByOne{newEmulator()}, cases, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not recording") {
		t.Fatalf("err = %v, want a refusal to record a failing result", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed update wrote %d entries", len(entries))
	}
}

func caseIDs(s *Store) []string {
	var ids []string
	for _, c := range s.Cases() {
		ids = append(ids, c.ID)
	}
	return ids
}

// copyStore writes the embedded cases selected by keep into dir.
func copyStore(t *testing.T, dir string, keep func(id string) bool) {
	t.Helper()
	src := Embedded()
	if err := os.WriteFile(filepath.Join(dir, MarkerName), markerContent(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range src.Cases() {
		if !keep(c.ID) {
			continue
		}
		err := fs.WalkDir(src.fsys, c.ID, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, filepath.FromSlash(p))
			if d.IsDir() {
				return os.MkdirAll(dst, 0o755)
			}
			b, err := fs.ReadFile(src.fsys, p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyDetectsCorruption flips one byte of each kind of file in a
// copied store and checks that Verify names the file.
func TestVerifyDetectsCorruption(t *testing.T) {
	const id = "vector_add/fp16_uniform_n33"
	for _, c := range []struct {
		file, want string
		edit       func(b []byte) []byte
	}{
		{"x.npy", "sha256", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"expected/z.npy", "sha256", func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b }},
		{"y.npy", "npy", func(b []byte) []byte { return b[:len(b)-1] }},
		{"x.npy", "npy", func(b []byte) []byte { return bytes.Replace(b, []byte("<f2"), []byte("<f4"), 1) }},
		{"case.json", "case.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"seed"`), []byte(`"sead"`), 1) }},
		{"case.json", "does not reproduce", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"seed": `), []byte(`"seed": 1`), 1)
		}},
		{"case.json", "contract", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"shape": [`+"\n        33"), []byte(`"shape": [`+"\n        34"), 1)
		}},
	} {
		t.Run(strings.ReplaceAll(c.file, "/", "_")+"_"+c.want, func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, dir, func(s string) bool { return s == id || s == "vector_add/fp16_uniform_n1" })
			p := filepath.Join(dir, filepath.FromSlash(id), filepath.FromSlash(c.file))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			nb := c.edit(slices.Clone(b))
			if bytes.Equal(b, nb) {
				t.Fatal("edit changed nothing")
			}
			if err := os.WriteFile(p, nb, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := openT(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			errs := Verify(s)
			if len(errs) == 0 {
				t.Fatal("Verify found nothing")
			}
			for _, err := range errs {
				msg := err.Error()
				if !strings.Contains(msg, filepath.Join(filepath.FromSlash(id), "")) {
					t.Errorf("error does not name the case: %v", err)
				}
				if !strings.Contains(msg, c.want) {
					t.Errorf("error lacks %q: %v", c.want, err)
				}
			}
			// The corrupted case is named: which file is the first error's.
			if !strings.Contains(errs[0].Error(), filepath.FromSlash(c.file)) && c.file != "case.json" {
				t.Errorf("first error does not name %s: %v", c.file, errs[0])
			}
		})
	}
}

func TestVerifyDetectsStrays(t *testing.T) {
	dir := t.TempDir()
	const id = "vector_add/int8_uniform_n16"
	copyStore(t, dir, func(s string) bool { return s == id })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "vector_add", "int8_uniform_n16", "w.npy"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "vector_add", "notes.txt"), []byte("x"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "vector_add", "int8_uniform_n16", "expected", "more"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "vector_add", "empty_case"), 0o755))
	s, err := openT(t, dir)
	must(err)
	var msgs []string
	for _, e := range Verify(s) {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"w.npy: stray file", "notes.txt: stray entry", "more: stray directory", "empty_case" + string(filepath.Separator) + "case.json"} {
		if !strings.Contains(all, want) {
			t.Errorf("Verify output lacks %q:\n%s", want, all)
		}
	}
}

func TestCheckOptions(t *testing.T) {
	s := Embedded()
	ctx := context.Background()
	n := len(s.Cases())
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		cs, err := Select(s, CheckOptions{Shard: i, Shards: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			seen[c.ID]++
		}
	}
	if len(seen) != n {
		t.Errorf("shards cover %d of %d cases", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s in %d shards", id, k)
		}
	}
	for _, o := range []CheckOptions{{Shard: 0, Shards: 2}, {Shard: 3, Shards: 2}, {Shard: 1}, {Shards: -1}, {Op: "nope"}, {Policy: "nope"}} {
		if _, err := Check(ctx, s, newEmulator(), o); err == nil || !harness.IsInput(err) {
			t.Errorf("%+v: err = %v, want an input error", o, err)
		}
	}
	// Another backend: judged by the case policy only.
	rs, err := Check(ctx, s, renamed{newEmulator()}, CheckOptions{Shard: 1, Shards: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Case.Numerics != nil {
			continue // a profile override this backend cannot set: an input error, by design
		}
		if slices.Contains(r.Policies, "exact") || !r.Pass() {
			t.Errorf("%s: policies %v pass %v\n%s", r.ID, r.Policies, r.Pass(), r.Failure())
		}
	}
	// A wrong backend fails; a crashing one is a backend error.
	rs, err = Check(ctx, s, offByOne{newEmulator()}, CheckOptions{Op: "vector_add", Shard: 1, Shards: 10})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range rs {
		switch v := rs[i].Verdict(); v {
		case harness.VerdictFail:
			failed++
		case harness.VerdictPass:
		default:
			t.Errorf("off-by-one backend: %s: verdict %q, want fail or pass", rs[i].ID, v)
		}
	}
	if failed == 0 {
		t.Errorf("off-by-one backend: no case of %d failed, want some", len(rs))
	}
	rs, err = Check(ctx, s, failing{}, CheckOptions{Shard: 1, Shards: 20})
	if err != nil {
		t.Fatal(err)
	}
	if v := rs[0].Verdict(); v != harness.VerdictBackendError || !harness.IsBackend(rs[0].Err) {
		t.Errorf("failing backend: %s: verdict %q, err %v, want %q", rs[0].ID, v, rs[0].Err, harness.VerdictBackendError)
	}
}

// renamed is the emulator under another name: not the reference backend.
type renamed struct{ backend.Backend }

func (renamed) Name() string { return "other" }

// Numerics and WithNumerics forward to the emulator, so the saturate cases
// run whichever shard they fall in.
func (r renamed) Numerics() tensor.Numerics { return r.Backend.(harness.NumericsBackend).Numerics() }

func (r renamed) WithNumerics(n tensor.Numerics) backend.Backend {
	return renamed{r.Backend.(harness.NumericsBackend).WithNumerics(n)}
}

// offByOne adds one unit to the last bit of the first nonzero-length
// output element: a small but real bug.
type offByOne struct{ backend.Backend }

func (offByOne) Name() string { return "off-by-one" }

func (b offByOne) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, cost, err := b.Backend.Run(ctx, op, p, in)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range out {
		if t.Len() > 0 {
			t.SetBits(0, t.Bits(0)^2)
		}
	}
	return out, cost, nil
}

// Numerics and WithNumerics forward to the emulator, so the saturate cases
// run whichever shard they fall in.
func (b offByOne) Numerics() tensor.Numerics { return b.Backend.(harness.NumericsBackend).Numerics() }

func (b offByOne) WithNumerics(n tensor.Numerics) backend.Backend {
	return offByOne{b.Backend.(harness.NumericsBackend).WithNumerics(n)}
}

type failing struct{}

func (failing) Name() string { return "failing" }

func (failing) Run(context.Context, string, ops.Params, map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	return nil, nil, os.ErrDeadlineExceeded
}

// openT opens the store in dir and closes it (releasing its shared lock)
// when the test ends.
func openT(t *testing.T, dir string) (*Store, error) {
	t.Helper()
	s, err := OpenDir(dir)
	if err == nil {
		s.WithRecorder(recorder())
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}
