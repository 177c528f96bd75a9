package ops

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

func gemmCase(t *testing.T, p Params, dist string, m, k, n int, seed uint64) (Params, GEMMConfig, map[string]*tensor.Tensor) {
	t.Helper()
	op := mustOp(t, "gemm")
	vp, err := op.Validate(p)
	if err != nil {
		t.Fatalf("gemm %v seed=%d: Validate: %v", p, seed, err)
	}
	in, err := op.Generate(vp, Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: dist, Seed: seed})
	if err != nil {
		t.Fatalf("gemm %v dist=%s %dx%dx%d seed=%d: Generate: %v", vp, dist, m, k, n, seed, err)
	}
	cfg, _ := ParseGEMM(vp)
	return vp, cfg, in
}

func TestGEMMValidate(t *testing.T) {
	op := mustOp(t, "gemm")
	p, err := op.Validate(Params{})
	if err != nil {
		t.Fatal(err)
	}
	want := Params{"mode": "fp16_fp32acc", "alpha": "1", "beta": "0", "accumulate": "sequential",
		"format_a": "ND", "format_b": "ND", "format_out": "ND", "m": "0", "k": "0", "n": "0"}
	if p.String() != want.String() {
		t.Fatalf("gemm: Validate({}) = %v, want %v", p, want)
	}
	if p, _ := op.Validate(Params{"alpha": "2.50", "beta": "-1e0"}); p["alpha"] != "2.5" || p["beta"] != "-1" {
		t.Errorf("gemm: Validate canonicalises numbers: got alpha=%s beta=%s, want 2.5 and -1", p["alpha"], p["beta"])
	}
	for _, tt := range []struct {
		p    Params
		want string
	}{
		{Params{"alpha": "NaN"}, `param "alpha": must be finite, got "NaN"`},
		{Params{"beta": "-Inf"}, `param "beta": must be finite`},
		{Params{"alpha": "1e400"}, `param "alpha": "1e400" is not a number`},
		{Params{"alpha": "two"}, `param "alpha": "two" is not a number`},
		{Params{"mode": "fp8"}, `param "mode": invalid value "fp8"`},
		{Params{"accumulate": "tree"}, `param "accumulate": invalid value "tree"`},
		{Params{"gamma": "1"}, `unknown param "gamma"`},
	} {
		if _, err := op.Validate(tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gemm: Validate(%v) = %v, want error containing %q", tt.p, err, tt.want)
		}
	}
}

// TestParseGEMMCanonical: ParseGEMM's shortcut for params in Validate's
// form gives what validating them gives, and takes every such params
// (else it would save nothing); anything it declines goes the long way.
// The params are every combination of each name absent or one of a few
// values, canonical or not.
func TestParseGEMMCanonical(t *testing.T) {
	var modes []string
	for _, m := range GEMMModes() {
		modes = append(modes, m.Name)
	}
	values := map[string][]string{
		"mode":       append(modes, "fp8", ""),
		"accumulate": {GEMMSequential, GEMMBlocked16, "tree"},
		"alpha":      {"1", "2.5", "-0.125", "1e-300", "2.50", "0x1p-3", "0x_1p-3", "+1", "1_0", "NaN", "Inf", "1e400", "two", "0"},
		"beta":       {"0", "-1", "3e+38", "-1e0", "-0"},
		"gamma":      {"1"},
	}
	names := []string{"mode", "accumulate", "alpha", "beta", "gamma"}
	var walk func(i int, p Params)
	walk = func(i int, p Params) {
		if i == len(names) {
			slow, slowErr := parseGEMMValidating(p)
			fast, ok := parseCanonicalGEMM(p)
			if ok && (slowErr != nil || fast != slow) {
				t.Errorf("gemm %v: parseCanonicalGEMM = %+v, want %+v (err %v) as Validate gives", p, fast, slow, slowErr)
			}
			if slowErr == nil {
				vp, _ := gemm{}.Validate(p)
				if got, ok := parseCanonicalGEMM(vp); !ok || got != slow {
					t.Errorf("gemm %v: parseCanonicalGEMM(Validate's %v) = %+v, %v, want %+v, true", p, vp, got, ok, slow)
				}
			}
			return
		}
		walk(i+1, p)
		for _, v := range values[names[i]] {
			q := maps.Clone(p)
			q[names[i]] = v
			walk(i+1, q)
		}
	}
	walk(0, Params{})
}

func TestGEMMInputErrors(t *testing.T) {
	op := mustOp(t, "gemm")
	f16 := func(shape ...int) *tensor.Tensor { return tensor.MustNew(tensor.Float16, shape...) }
	i8 := func(shape ...int) *tensor.Tensor { return tensor.MustNew(tensor.Int8, shape...) }
	f32 := func(shape ...int) *tensor.Tensor { return tensor.MustNew(tensor.Float32, shape...) }
	int8p := Params{"mode": "int8_int32acc"}
	for _, tt := range []struct {
		name string
		p    Params
		in   map[string]*tensor.Tensor
		want string
	}{
		{"ok", Params{}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4)}, ""},
		{"ok c ignored", Params{}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4), "c": f16(2, 4)}, ""},
		{"inner", Params{}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(4, 4)}, `inputs "a" [2 3] and "b" [4 4]: inner dimensions differ`},
		{"a missing", Params{}, map[string]*tensor.Tensor{"b": f16(4, 4)}, `input "a" is missing`},
		{"rank", Params{}, map[string]*tensor.Tensor{"a": f16(6), "b": f16(4, 4)}, `input "a": shape [6], want [M,K]`},
		{"c missing", Params{"beta": "0.5"}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4)}, `input "c" is missing (required because beta=0.5 ≠ 0)`},
		{"c shape", Params{"beta": "1"}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4), "c": f16(4, 2)}, `input "c": shape [4 2], want [2 4]`},
		{"c dtype", Params{"beta": "1"}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4), "c": f32(2, 4)}, `input "c": dtype fp32, want fp16`},
		{"dtype", Params{"mode": "bf16_fp32acc"}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4)}, `input "a": dtype fp16, want bf16`},
		{"scale in fp mode", Params{}, map[string]*tensor.Tensor{"a": f16(2, 3), "b": f16(3, 4), "scale_a": f32(2)}, `unknown input "scale_a"`},
		{"int8 ok", int8p, map[string]*tensor.Tensor{"a": i8(2, 3), "b": i8(3, 4), "scale_a": f32(2), "scale_b": f32(1)}, ""},
		{"int8 scale missing", int8p, map[string]*tensor.Tensor{"a": i8(2, 3), "b": i8(3, 4), "scale_a": f32(2)}, `input "scale_b" is missing`},
		{"int8 scale shape", int8p, map[string]*tensor.Tensor{"a": i8(2, 3), "b": i8(3, 4), "scale_a": f32(3), "scale_b": f32(4)}, `input "scale_a": shape [3], want [2]`},
		{"int8 K", int8p, map[string]*tensor.Tensor{"a": i8(1, GEMMInt8MaxK+1), "b": i8(GEMMInt8MaxK+1, 1), "scale_a": f32(1), "scale_b": f32(1)}, "could overflow the int32 accumulator"},
		{"int8 K max ok", int8p, map[string]*tensor.Tensor{"a": i8(1, GEMMInt8MaxK), "b": i8(GEMMInt8MaxK, 1), "scale_a": f32(1), "scale_b": f32(1)}, ""},
		{"cap", int8p, map[string]*tensor.Tensor{"a": i8(1<<16, 1<<8), "b": i8(1<<8, 1<<16), "scale_a": f32(1), "scale_b": f32(1)}, "exceeds the cap"},
	} {
		p, _ := op.Validate(tt.p)
		err := CheckInputs(op, p, tt.in)
		if tt.want == "" {
			if err != nil {
				t.Errorf("gemm %v (%s): CheckInputs = %v, want nil", p, tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gemm %v (%s): CheckInputs = %v, want error containing %q", p, tt.name, err, tt.want)
		}
	}
}

// TestGEMMSizeCap: M·N·K up to GEMMMaxMACs is legal, 4096³ and an LLM's
// prefill projection of 4096 tokens (4096×4096×11008) included, and one
// more multiply-accumulate in any dimension is an input error, also where
// the product overflows int.
func TestGEMMSizeCap(t *testing.T) {
	op := mustOp(t, "gemm")
	cfg, err := ParseGEMM(Params{})
	if err != nil {
		t.Fatal(err)
	}
	const big = 1 << 62
	for _, tt := range []struct {
		m, k, n int
		ok      bool
	}{
		{4096, 4096, 4096, true},
		{4096, 4096, 11008, true},
		{4096, 4096, 16384, true}, // the cap itself
		{4097, 4096, 16384, false},
		{4096, 4097, 16384, false},
		{4096, 4096, 16385, false},
		{1, GEMMMaxMACs, 1, true},
		{1, GEMMMaxMACs + 1, 1, false},
		{GEMMMaxMACs, 1, 1, true},
		{1, 1, GEMMMaxMACs + 1, false},
		{big, big, big, false},
		{0, big, big, true}, // no multiply-accumulates at all
	} {
		err := checkGEMMSize(op, cfg, tt.m, tt.k, tt.n)
		switch {
		case tt.ok && err != nil:
			t.Errorf("gemm m=%d k=%d n=%d: checkGEMMSize = %v, want nil", tt.m, tt.k, tt.n, err)
		case !tt.ok && (err == nil || !strings.Contains(err.Error(), "exceeds the cap")):
			t.Errorf("gemm m=%d k=%d n=%d: checkGEMMSize = %v, want an error containing %q", tt.m, tt.k, tt.n, err, "exceeds the cap")
		}
	}
}

func TestGEMMGenerateIsSeeded(t *testing.T) {
	op := mustOp(t, "gemm")
	for _, mode := range GEMMModes() {
		for _, dist := range op.Dists() {
			for _, beta := range []string{"0", "1"} {
				p, _ := op.Validate(Params{"mode": mode.Name, "beta": beta})
				g := Gen{Dims: map[string]int{"m": 5, "k": 33, "n": 7}, Dist: dist, Seed: 7}
				x, err := op.Generate(p, g)
				if err != nil {
					t.Fatalf("gemm %v dist=%s seed=7: Generate: %v", p, dist, err)
				}
				y, _ := op.Generate(p, g)
				g.Seed = 8
				z, _ := op.Generate(p, g)
				if err := CheckInputs(op, p, x); err != nil {
					t.Errorf("gemm %v dist=%s seed=7: generated inputs break the contract: %v", p, dist, err)
				}
				for name := range x {
					if ok, i := tensor.BitsEqual(x[name], y[name]); !ok {
						t.Errorf("gemm %v dist=%s seed=7: input %s differs between two generations at %d", p, dist, name, i)
					}
					if ok, _ := tensor.BitsEqual(x[name], z[name]); ok && name != "c" {
						t.Errorf("gemm %v dist=%s seed=7 vs 8: input %s identical, want different", p, dist, name)
					}
				}
			}
		}
	}
}

func TestGEMMCancelDistCancels(t *testing.T) {
	_, cfg, in := gemmCase(t, Params{"mode": "fp32"}, DistCancel, 4, 64, 4, 3)
	d, s := reference.MatMul(4, 64, 4, in["a"].Float64s(), in["b"].Float64s())
	for i := range d {
		if math.Abs(d[i]) > 64*0x1p-20*s[i] {
			t.Errorf("gemm mode=%s dist=cancel seed=3: element %d: |d| = %g not ≪ S = %g", cfg.Mode.Name, i, math.Abs(d[i]), s[i])
		}
	}
}

// The GEMM reference agrees with the bound's reference bit for bit.
func TestGEMMRefMatchesReference(t *testing.T) {
	for _, mode := range GEMMModes() {
		p, cfg, in := gemmCase(t, Params{"mode": mode.Name, "alpha": "0.75", "beta": "-1.25"}, DistNormal, 5, 19, 6, 11)
		e, err := mustOp(t, "gemm").Expect(p, in, tensor.Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		var sa, sb []float64
		if cfg.Mode.Int8() {
			sa, sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
		}
		r, _ := reference.GEMM(5, 19, 6, in["a"].Float64s(), in["b"].Float64s(), cfg.Alpha, cfg.Beta, in["c"].Float64s(), sa, sb)
		for i, want := range r {
			ieee := tensor.Numerics{}
			if got := e["out"].Ref[i]; got != want && got != ieee.Round(want, cfg.Mode.Out) {
				t.Errorf("gemm %v seed=11: element %d: Ref %g, reference.GEMM %g", p, i, got, want)
			}
		}
	}
}

// boundStats checks got against e and returns the failures (as messages)
// and the tightness max |g−r|/bound over finite elements.
type boundStats struct {
	tight     float64
	fails     []string
	ambiguous int
}

func checkBound(prefix string, got *tensor.Tensor, e *bound.Expected) boundStats {
	var st boundStats
	for i := 0; i < got.Len(); i++ {
		g := got.Float64(i)
		if e.Ambiguous(i) {
			st.ambiguous++
		}
		if !e.Accepts(i, g) {
			st.fails = append(st.fails, fmt.Sprintf("%s: element %d: got %g, want %g (alt %v), bound %g", prefix, i, g, e.Ref[i], e.Alt[i], e.Bound[i]))
			continue
		}
		if bound.Of(g) == 0 && e.Bound[i] > 0 && !math.IsInf(e.Bound[i], 0) {
			st.tight = math.Max(st.tight, math.Abs(g-e.Ref[i])/e.Bound[i])
		}
	}
	return st
}

var gemmAlphaBeta = []Params{
	{"alpha": "1", "beta": "0"},
	{"alpha": "0.5", "beta": "0"},
	{"alpha": "1", "beta": "1"},
	{"alpha": "-1.3", "beta": "0.3"},
	{"alpha": "0", "beta": "2"},
}

// The bound holds for every legal implementation: both accumulate models,
// multiply-then-add, pairwise, reversed and split-K summation, and a fused
// epilogue; across modes, alpha/beta, distributions and shapes.
func TestGEMMBoundHoldsForLegalImplementations(t *testing.T) {
	op := mustOp(t, "gemm")
	shapes := [][3]int{{1, 1, 1}, {3, 17, 5}, {2, 64, 3}, {2, 300, 2}}
	tight := map[string]float64{}
	var ambiguous int
	seed := uint64(100)
	for _, mode := range GEMMModes() {
		for _, ab := range gemmAlphaBeta {
			for _, dist := range op.Dists() {
				for _, sh := range shapes {
					seed++
					p := ab.Clone()
					p["mode"] = mode.Name
					vp, cfg, in := gemmCase(t, p, dist, sh[0], sh[1], sh[2], seed)
					exp, err := op.Expect(vp, in, tensor.Numerics{})
					if err != nil {
						t.Fatalf("gemm %v seed=%d: Expect: %v", vp, seed, err)
					}
					for _, impl := range legalImpls {
						for _, fused := range []bool{false, true} {
							got := implGEMM(cfg, in, impl, fused, tensor.Numerics{})
							prefix := fmt.Sprintf("gemm %v dist=%s %dx%dx%d seed=%d impl=%s fused-epilogue=%v", vp, dist, sh[0], sh[1], sh[2], seed, implNames[impl], fused)
							st := checkBound(prefix, got, exp["out"])
							for _, f := range st.fails[:min(len(st.fails), 3)] {
								t.Error(f)
							}
							if dist != DistSpecial && dist != DistLarge {
								key := mode.Name + " " + implNames[impl]
								tight[key] = math.Max(tight[key], st.tight)
							}
							ambiguous += st.ambiguous
						}
					}
				}
			}
		}
	}
	for _, mode := range GEMMModes() {
		var parts []string
		for _, impl := range legalImpls {
			parts = append(parts, fmt.Sprintf("%s=%.3f", implNames[impl], tight[mode.Name+" "+implNames[impl]]))
		}
		t.Logf("gemm tightness max(err/bound) mode=%s (uniform, normal, cancel): %s", mode.Name, strings.Join(parts, " "))
	}
	t.Logf("gemm overflow-ambiguous elements seen: %d", ambiguous)
}

// uniform01 fills a [m,k] and b [k,n] fp16 with values uniform in [0, 1).
func uniform01(seed uint64, d tensor.DType, m, k, n int) map[string]*tensor.Tensor {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := map[string]*tensor.Tensor{"a": tensor.MustNew(d, m, k), "b": tensor.MustNew(d, k, n)}
	for _, t := range in {
		for i := 0; i < t.Len(); i++ {
			t.SetFloat64(i, rng.Float64(), tensor.Numerics{})
		}
	}
	return in
}

// An implementation accumulating in fp16 when the mode says fp32 fails the
// bound at K ≥ 256, while the legal ones pass on the same inputs.
func TestGEMMBoundCatchesFP16Accumulation(t *testing.T) {
	op := mustOp(t, "gemm")
	for _, mode := range []string{"fp16_fp32acc", "bf16_fp32acc"} {
		for _, k := range []int{256, 1024} {
			p, _ := op.Validate(Params{"mode": mode})
			cfg, _ := ParseGEMM(p)
			seed := uint64(k)
			in := uniform01(seed, cfg.Mode.In, 8, k, 8)
			exp, err := op.Expect(p, in, tensor.Numerics{})
			if err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf("gemm %v dist=uniform01 8x%dx8 seed=%d", p, k, seed)
			bad := checkBound(prefix+" impl=fp16-acc-bug", implGEMM(cfg, in, implFP16Acc, false, tensor.Numerics{}), exp["out"])
			good := checkBound(prefix+" impl=seq-fused", implGEMM(cfg, in, implSeqFused, false, tensor.Numerics{}), exp["out"])
			if len(good.fails) > 0 {
				t.Errorf("%s", good.fails[0])
			}
			if len(bad.fails) == 0 {
				t.Errorf("%s impl=fp16-acc-bug: every element within the bound, want at least one failure: got tightness %.3f / want > 1 / bound as in Expect", prefix, bad.tight)
			}
			t.Logf("%s: fp16-accumulation bug fails %d of 64 elements; legal sequential tightness %.3f", prefix, len(bad.fails), good.tight)
		}
	}
}

// Special values: the classes the bound allows are those IEEE gives.
func TestGEMMSpecialClasses(t *testing.T) {
	op := mustOp(t, "gemm")
	inf, nan := math.Inf(1), math.NaN()
	for _, tt := range []struct {
		name     string
		mode     string
		alpha    string
		a, b     []float64 // a [1,k], b [k,1]
		want     bound.Special
		wantFin  bool // a finite value is acceptable
		ambiguos bool
	}{
		{"inf times finite", "fp16_fp32acc", "1", []float64{inf, 1}, []float64{2, 3}, bound.PosInf, false, false},
		{"inf times zero", "fp16_fp32acc", "1", []float64{inf, 1}, []float64{0, 3}, bound.NaN, false, false},
		{"both infinities", "fp16_fp32acc", "1", []float64{inf, -inf}, []float64{1, 1}, bound.NaN, false, false},
		{"nan", "fp32", "1", []float64{nan, 1}, []float64{1, 1}, bound.NaN, false, false},
		{"negative alpha flips", "fp16_fp32acc", "-2", []float64{inf, 1}, []float64{2, 3}, bound.NegInf, false, false},
		{"zero alpha times inf", "fp16_fp32acc", "0", []float64{inf, 1}, []float64{2, 3}, bound.NaN, false, false},
		// fp16 accumulation: 60000 + 60000 overflows whatever the order.
		{"fp16 acc overflow", "fp16", "1", []float64{60000, 60000}, []float64{1, 1}, bound.PosInf, false, false},
		// 60000 + 60000 − 60000: finite in some orders, +Inf in others.
		{"fp16 acc ambiguous", "fp16", "1", []float64{60000, 60000, -60000}, []float64{1, 1, 1}, bound.PosInf, true, true},
		// +Inf product, and finite products that may overflow to −Inf first.
		{"fp16 inf and opposite overflow", "fp16", "1", []float64{inf, -60000, -60000}, []float64{1, 1, 1}, bound.PosInf | bound.NaN, false, false},
		// fp32 accumulation of the same never overflows.
		{"fp32 acc no overflow", "fp16_fp32acc", "1", []float64{60000, 60000, -60000}, []float64{1, 1, 1}, 0, true, false},
	} {
		p, err := op.Validate(Params{"mode": tt.mode, "alpha": tt.alpha})
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := ParseGEMM(p)
		k := len(tt.a)
		in := map[string]*tensor.Tensor{
			"a": must(tensor.FromFloat64(cfg.Mode.In, []int{1, k}, tt.a, tensor.Numerics{})),
			"b": must(tensor.FromFloat64(cfg.Mode.In, []int{k, 1}, tt.b, tensor.Numerics{})),
		}
		e, err := op.Expect(p, in, tensor.Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		o := e["out"]
		fin := !math.IsNaN(o.Ref[0]) && !math.IsInf(o.Ref[0], 0)
		if o.Alt[0] != tt.want || fin != tt.wantFin || o.Ambiguous(0) != tt.ambiguos {
			t.Errorf("gemm %v (%s): got alt %v finite-ok %v ambiguous %v (ref %g) / want alt %v finite-ok %v ambiguous %v / bound %g",
				p, tt.name, o.Alt[0], fin, o.Ambiguous(0), o.Ref[0], tt.want, tt.wantFin, tt.ambiguos, o.Bound[0])
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Under overflow=saturate, the clamped outcomes of an intermediate
// overflow lie within the bound.
func TestGEMMSaturateFoldsOverflow(t *testing.T) {
	op := mustOp(t, "gemm")
	p, _ := op.Validate(Params{"mode": "fp16"})
	in := map[string]*tensor.Tensor{
		"a": must(tensor.FromFloat64(tensor.Float16, []int{1, 3}, []float64{60000, 60000, -60000}, tensor.Numerics{})),
		"b": must(tensor.FromFloat64(tensor.Float16, []int{3, 1}, []float64{1, 1, 1}, tensor.Numerics{})),
	}
	num := tensor.Numerics{Overflow: tensor.OverflowSaturate}
	e, err := op.Expect(p, in, num)
	if err != nil {
		t.Fatal(err)
	}
	o := e["out"]
	for _, g := range []float64{60000, 65504} {
		if !o.Accepts(0, g) {
			t.Errorf("gemm %v saturate: got %g rejected / want %g / bound %g", p, g, o.Ref[0], o.Bound[0])
		}
	}
}

// The dot-product part of the bound alone: |acc − d| / (g·S + K·h·(1+g))
// for the legal summation orders, per accumulator format and K (logged:
// how pessimistic the worst-case γ_K·S is on random data).
func TestGEMMDotBoundTightness(t *testing.T) {
	for _, acc := range []tensor.DType{tensor.Float32, tensor.Float16} {
		for _, k := range []int{64, 256, 1024, 4096} {
			in := uniform01(uint64(k)+3, tensor.Float16, 4, k, 4)
			a, b := in["a"].Float64s(), in["b"].Float64s()
			d, s := reference.MatMul(4, k, 4, a, b)
			f, _ := bound.NewFormat(acc, tensor.Numerics{})
			u, h := f.U, f.Under
			g := bound.Growth(k, u)
			var worst float64
			var worstImpl string
			ps := make([]float64, k)
			for _, impl := range legalImpls {
				for i := 0; i < 4; i++ {
					for j := 0; j < 4; j++ {
						for kk := 0; kk < k; kk++ {
							ps[kk] = a[i*k+kk] * b[kk*4+j]
						}
						got := implDot(impl, acc, ps)
						bnd := float64(g*s[i*4+j]) + float64(float64(k)*h*(1+g))
						if r := math.Abs(got-d[i*4+j]) / bnd; r > worst {
							worst, worstImpl = r, implNames[impl]
						}
						if math.Abs(got-d[i*4+j]) > bnd {
							t.Errorf("gemm dot acc=%s K=%d impl=%s: element (%d,%d): got %g / want %g / bound %g", acc, k, implNames[impl], i, j, got, d[i*4+j], bnd)
						}
					}
				}
			}
			t.Logf("gemm dot-product bound tightness acc=%s K=%d (uniform [0,1) fp16): %.4f (%s); g=%.3g", acc, k, worst, worstImpl, g)
		}
	}
}

// TestCheckInputsUnknownInOrder: with several inputs the op does not
// take, CheckInputs names the first in sorted order, whatever the map's
// iteration order (tried twenty times).
func TestCheckInputsUnknownInOrder(t *testing.T) {
	op := mustOp(t, "gemm")
	p, err := op.Validate(Params{})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"a": tensor.MustNew(tensor.Float16, 2, 3), "b": tensor.MustNew(tensor.Float16, 3, 4)}
	for _, name := range []string{"zz", "x3", "scale_a", "x1", "x2"} {
		in[name] = tensor.MustNew(tensor.Float32, 2)
	}
	for range 20 {
		if err := CheckInputs(op, p, in); err == nil || !strings.Contains(err.Error(), `unknown input "scale_a"`) {
			t.Fatalf("gemm %v, inputs a, b and five unknown: CheckInputs = %v, want the error to name %q", p, err, "scale_a")
		}
	}
}
