package golden

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// storedInputs calls f with every stored case that keeps its inputs as
// files (recipes regenerate megabytes: their sizes are not where the
// rules are exercised), its validated params (defaults filled in) and
// inputs.
func storedInputs(t *testing.T, f func(c *StoredCase, p ops.Params, in map[string]*tensor.Tensor)) {
	t.Helper()
	s := Embedded()
	for _, c := range s.Cases() {
		if c.Err != nil {
			t.Fatalf("%s: %v", c.ID, c.Err)
		}
		if c.File.Recipe {
			continue
		}
		in, _, err := s.Load(c)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		f(c, c.File.Params, in)
	}
}

// TestContractCoverage: the golden set exercises the whole contract.
// Every param of every op takes every value of its enumeration, and a
// numeric param a value other than its default (for that case: a default
// that depends on the inputs, decode_attention's scale = 1/√D, is
// compared with the case's own), in some stored case; and every tie and
// ordering rule of opdb.ContractRules is exercised by some stored case:
// its Count is positive on the case's inputs. The failure lists what no
// case covers.
func TestContractCoverage(t *testing.T) {
	type key struct{ op, param, value string }
	seen := map[key]bool{}       // enumerated values taken
	nonDefault := map[key]bool{} // numeric params off their default (value "")
	counts := map[string]int{}   // rule → count over the store
	where := map[string][]string{}
	storedInputs(t, func(c *StoredCase, p ops.Params, in map[string]*tensor.Tensor) {
		op, err := ops.Lookup(c.File.Op)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		for _, s := range op.ParamSpecs() {
			v, ok := p[s.Name]
			if !ok {
				t.Errorf("%s: param %q absent from case.json params %v; want every param, defaults filled in", c.ID, s.Name, p)
				continue
			}
			if s.Values != nil {
				seen[key{op.Name(), s.Name, v}] = true
				continue
			}
			without := maps.Clone(p)
			delete(without, s.Name)
			def, err := ops.CompleteParams(op, without, in)
			if err != nil {
				t.Fatalf("%s: %v", c.ID, err)
			}
			if def[s.Name] != v {
				nonDefault[key{op.Name(), s.Name, ""}] = true
			}
		}
		for _, r := range opdb.ContractRules {
			if r.Op != op.Name() {
				continue
			}
			n, err := r.Count(p, in)
			if err != nil {
				t.Fatalf("%s: rule %q: %v", c.ID, r.Name, err)
			}
			id := r.Op + ": " + r.Name
			counts[id] += n
			if n > 0 {
				where[id] = append(where[id], fmt.Sprintf("%s (%d)", c.ID, n))
			}
		}
	})
	var missing []string
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		for _, s := range op.ParamSpecs() {
			if s.Values == nil {
				if !nonDefault[key{name, s.Name, ""}] {
					missing = append(missing, fmt.Sprintf("%s: param %s never takes a value other than its default", name, s.Name))
				}
				continue
			}
			for _, v := range s.Values {
				if !seen[key{name, s.Name, v}] {
					missing = append(missing, fmt.Sprintf("%s: param %s never takes the value %q", name, s.Name, v))
				}
			}
		}
	}
	for _, r := range opdb.ContractRules {
		id := r.Op + ": " + r.Name
		if counts[id] == 0 {
			missing = append(missing, fmt.Sprintf("%s: rule not exercised by any stored case", id))
		} else {
			t.Logf("%s: %d in %s", id, counts[id], strings.Join(where[id], ", "))
		}
	}
	if len(missing) > 0 {
		t.Errorf("the golden set leaves %d parts of the contract uncovered (add small cases to opdb/<op>.go's GoldenCases, then make golden):\n\t%s",
			len(missing), strings.Join(missing, "\n\t"))
	}
}

// TestCoverageCatchesKernelBugs: the golden cases that close the coverage
// holes catch the kernel bugs they are for, and only those cases do (the
// set without them passed each of these kernels). Each backend is the
// emulator with one deviation: decode_attention ignoring scale (the
// default 1/√D used), kv_update rounding int8 ties half away from zero
// (judged under the default half-even profile), gemm24 computed as gemm
// on the decompressed dense matrix (0·inf = NaN at pruned positions). A
// legal deviation passes every case: kv_update quantising the exact
// quotient v/scale instead of RN32(v/scale), which gives another code at
// a double-rounding tie.
func TestCoverageCatchesKernelBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three ops' golden cases on three backends")
	}
	emu := emulator.New(npu.Ascend910B())
	quotChanged := new(atomic.Int64)
	defer func() {
		// The legal variant differs from the emulator somewhere, or it
		// proved nothing.
		if quotChanged.Load() == 0 {
			t.Errorf("kv_update: the exact-quotient quantiser gave the emulator's codes in every stored case; want a double-rounding tie where they differ")
		}
	}()
	away := npu.Ascend910B()
	away.Numerics.Int8Rounding = tensor.RoundHalfAway
	for _, tc := range []struct {
		name string
		b    backend.Backend
		op   string
		want func(c ops.Case) bool // the cases that must fail; every other must pass
	}{
		{"decode_attention-ignores-scale", ignoresScale{emu}, "decode_attention",
			func(c ops.Case) bool {
				return ops.DecodeScale(c.Params, c.Dims["d"]) != ops.DecodeScale(nil, c.Dims["d"])
			}},
		{"kv_update-int8-half-away", plain{emulator.New(away)}, "kv_update",
			func(c ops.Case) bool { return c.Dist == ops.DistTies }},
		{"gemm24-dense-decompressed", dense24{emu}, "gemm24",
			func(c ops.Case) bool { return c.Dist == ops.DistPrunedInf }},
		// Legal: the exact quotient's code at a double-rounding tie.
		{"kv_update-int8-exact-quotient", exactQuotient{Backend: emu, changed: quotChanged}, "kv_update",
			func(ops.Case) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outcomes, err := Check(context.Background(), Embedded(), tc.b, CheckOptions{Op: tc.op, Jobs: 2, NoBudgets: true})
			if err != nil {
				t.Fatal(err)
			}
			wanted := 0
			for i := range outcomes {
				o := &outcomes[i]
				switch w := tc.want(o.Case); {
				case w && o.Pass():
					t.Errorf("%s %s seed=%d: %s passes backend %s; want a failure (the bug it is for)", o.Case.Op, o.Case.Params.String(), o.Case.Seed, o.ID, tc.b.Name())
				case w:
					wanted++
					t.Logf("%s fails, as wanted: %s", o.ID, firstLine(o.Failure()))
				case !o.Pass():
					t.Errorf("%s %s seed=%d: %s fails backend %s: %s; want only the cases for the bug to fail", o.Case.Op, o.Case.Params.String(), o.Case.Seed, o.ID, tc.b.Name(), firstLine(o.Failure()))
				}
			}
			if wanted == 0 && !strings.HasSuffix(tc.name, "exact-quotient") {
				t.Errorf("%s: no stored case is selected as the one for the bug", tc.name)
			}
		})
	}
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// plain hides a backend's numerics profile: the harness judges it under
// the default profile whatever it computes with.
type plain struct{ backend.Backend }

func (plain) Name() string { return "plain" }

// ignoresScale runs decode_attention without its scale param: the
// default 1/√D whatever the case says.
type ignoresScale struct{ backend.Backend }

func (ignoresScale) Name() string { return "ignores-scale" }

func (b ignoresScale) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if op == "decode_attention" {
		p = maps.Clone(p)
		delete(p, "scale")
	}
	return b.Backend.Run(ctx, op, p, in)
}

// dense24 computes gemm24 as gemm on the decompressed dense a (zeros at
// the pruned positions), so a pruned position meeting ±Inf or NaN in b
// gives NaN.
type dense24 struct{ backend.Backend }

func (dense24) Name() string { return "dense-decompressed" }

func (b dense24) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if op != "gemm24" {
		return b.Backend.Run(ctx, op, p, in)
	}
	av, am, bm := in["a_values"], in["a_meta"], in["b"]
	m, k := av.Shape[0], 4*am.Shape[1] // b may be FRACTAL_NZ: K from a_meta
	a := tensor.MustNew(av.DType, m, k)
	for i := range m {
		for g := range k / 4 {
			f, s, ok := ops.DecodeMeta24(am.U8()[i*(k/4)+g])
			if !ok {
				return nil, nil, fmt.Errorf("gemm24: a_meta[%d,%d] malformed", i, g)
			}
			a.SetBits(i*k+4*g+f, av.Bits(i*(k/2)+2*g))
			a.SetBits(i*k+4*g+s, av.Bits(i*(k/2)+2*g+1))
		}
	}
	gin := map[string]*tensor.Tensor{"a": a, "b": bm}
	for _, name := range []string{"scale_a", "scale_b"} {
		if t, ok := in[name]; ok {
			gin[name] = t
		}
	}
	// gemm takes b and out in the layout gemm24 was given them in.
	gp := ops.Params{"mode": p["mode"], "accumulate": p["accumulate"], "m": fmt.Sprint(m), "k": fmt.Sprint(k)}
	for _, name := range []string{"format_b", "format_out", "n"} {
		if v, ok := p[name]; ok {
			gp[name] = v
		}
	}
	out, meas, err := b.Backend.Run(ctx, "gemm", gp, gin)
	if err != nil {
		return nil, nil, err
	}
	return map[string]*tensor.Tensor{"out": out["out"]}, meas, nil
}

// exactQuotient runs kv_update and requantises every written int8 row
// from the kernel's own new_k and new_v with the exact quotient v/scale
// (a float64 quotient of an fp16 value by an fp32 scale is never on k+½
// unless the exact one is, so rounding it gives the exact quotient's
// code), counting the codes that changed.
type exactQuotient struct {
	backend.Backend
	changed *atomic.Int64
}

func (exactQuotient) Name() string { return "exact-quotient" }

func (b exactQuotient) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, meas, err := b.Backend.Run(ctx, op, p, in)
	if err != nil || op != "kv_update" {
		return out, meas, err
	}
	g, writes, err := ops.KVUpdateWrites(p, in)
	if err != nil || !g.Int8 {
		return out, meas, err
	}
	for _, kv := range [][2]string{{"new_k", "k_cache"}, {"new_v", "v_cache"}} {
		nk, cache := out[kv[0]], out[kv[1]]
		for _, w := range writes {
			for h := range g.H {
				src, dst := (w.B*g.H+h)*g.D, (w.Row*g.H+h)*g.D
				amax := 0.0
				for i := range g.D {
					amax = math.Max(amax, math.Abs(nk.Float64(src+i)))
				}
				if amax == 0 || math.IsNaN(amax) || math.IsInf(amax, 0) {
					continue
				}
				scale := float64(float32(amax / 127))
				for i := range g.D {
					q := math.Max(-127, math.Min(127, math.RoundToEven(nk.Float64(src+i)/scale)))
					if q != cache.Float64(dst+i) {
						b.changed.Add(1)
						cache.SetFloat64(dst+i, q, tensor.Numerics{})
					}
				}
			}
		}
	}
	return out, meas, nil
}
