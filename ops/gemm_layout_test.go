package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// gemmLayouts are the format triples (a, b, out) the layout tests run.
var gemmLayouts = [][3]string{
	{FormatFractalNZ, FormatND, FormatND}, {FormatND, FormatFractalNZ, FormatND},
	{FormatND, FormatND, FormatFractalNZ}, {FormatFractalNZ, FormatFractalNZ, FormatFractalNZ},
}

// TestGEMMLayoutExpectIsNDMapped: for every mode and layout, with M, K, N
// off every fractal, the case generated in the layout holds the ND case's
// values laid out by transdata's map (same seed), and its Expected is the
// ND case's mapped through the layout, each padding element of an NZ out
// accepting +0 alone.
func TestGEMMLayoutExpectIsNDMapped(t *testing.T) {
	const m, k, n, seed = 17, 40, 9, 7
	for _, mode := range GEMMModes() {
		for _, lay := range gemmLayouts {
			for _, beta := range []string{"0", "0.5"} {
				p := Params{"mode": mode.Name, "beta": beta, "format_a": lay[0], "format_b": lay[1], "format_out": lay[2],
					"m": fmt.Sprint(m), "k": fmt.Sprint(k), "n": fmt.Sprint(n)}
				pND := Params{"mode": mode.Name, "beta": beta}
				checkLayoutCase(t, GEMM, p, pND, map[string]int{"m": m, "k": k, "n": n}, seed, mode.Out)
			}
		}
	}
	for _, mode := range gemm24Modes {
		for _, lay := range [][2]string{{FormatFractalNZ, FormatND}, {FormatND, FormatFractalNZ}, {FormatFractalNZ, FormatFractalNZ}} {
			p := Params{"mode": mode, "format_b": lay[0], "format_out": lay[1], "n": fmt.Sprint(n)}
			checkLayoutCase(t, GEMM24, p, Params{"mode": mode}, map[string]int{"m": m, "k": k, "n": n}, seed, tensor.Float16)
		}
	}
}

// checkLayoutCase runs one case of TestGEMMLayoutExpectIsNDMapped.
func checkLayoutCase(t *testing.T, op Op, p, pND Params, dims map[string]int, seed uint64, outD tensor.DType) {
	t.Helper()
	what := fmt.Sprintf("%s %v dims=%v seed=%d", op.Name(), p, dims, seed)
	vp, err := op.Validate(p)
	if err != nil {
		t.Fatalf("%s: Validate: %v", what, err)
	}
	vnd, _ := op.Validate(pND)
	g := Gen{Dims: dims, Dist: DistUniform, Seed: seed}
	in, err := op.Generate(vp, g)
	if err != nil {
		t.Fatalf("%s: Generate: %v", what, err)
	}
	inND, err := op.Generate(vnd, g)
	if err != nil {
		t.Fatalf("%s: Generate ND: %v", what, err)
	}
	l := layoutOf(vp)
	for name, f := range map[string]string{"a": l.A, "b": l.B, "c": l.Out} {
		if in[name] == nil || f != FormatFractalNZ {
			continue
		}
		want, _ := gemmToNZ(inND[name])
		for i := range want.Len() {
			if in[name].Bits(i) != want.Bits(i) {
				t.Fatalf("%s: input %q element %d: got bits %#x, want %#x (the ND case's value through transdata's map)", what, name, i, in[name].Bits(i), want.Bits(i))
			}
		}
	}
	num := copyNumerics // IEEE: overflow to inf, subnormals kept
	got, err := op.Expect(vp, in, num)
	if err != nil {
		t.Fatalf("%s: Expect: %v", what, err)
	}
	want, err := op.Expect(vnd, inND, num)
	if err != nil {
		t.Fatalf("%s: Expect ND: %v", what, err)
	}
	e, w := got["out"], want["out"]
	mm, nn := dims["m"], dims["n"]
	idx := make([]int, mm*nn)
	for i := range idx {
		idx[i] = i
	}
	if l.Out == FormatFractalNZ {
		idx = reference.NDToNZ(1, mm, nn, TransDataC0(outD))
	}
	if e.Len() != len(idx) {
		t.Fatalf("%s: Expected has %d elements, want %d", what, e.Len(), len(idx))
	}
	for i, j := range idx {
		if j < 0 {
			if !e.Accepts(i, 0) || e.Accepts(i, math.Copysign(0, -1)) || e.Accepts(i, 1e-30) {
				t.Fatalf("%s: padding element %d: accepts +0 %v, −0 %v, 1e-30 %v; want +0 alone", what, i, e.Accepts(i, 0), e.Accepts(i, math.Copysign(0, -1)), e.Accepts(i, 1e-30))
			}
			continue
		}
		gr, gb, ga := e.RefAt(i), e.BoundAt(i), e.AltAt(i)
		wr, wb, wa := w.RefAt(j), w.BoundAt(j), w.AltAt(j)
		if !bound.Identical(gr, wr) || gb != wb || ga != wa {
			t.Fatalf("%s: out element %d (ND %d): got ref %g bound %g alt %v, want ref %g bound %g alt %v", what, i, j, gr, gb, ga, wr, wb, wa)
		}
	}
}

// TestGEMMLayoutInputErrors: an operand that does not fit its format, or
// NZ padding that is not +0, is an input error naming the param; gemm24's
// a is ND only.
func TestGEMMLayoutInputErrors(t *testing.T) {
	p := Params{"format_a": FormatFractalNZ, "format_out": FormatFractalNZ, "m": "17", "k": "20", "n": "9"}
	vp, err := GEMM.Validate(p)
	if err != nil {
		t.Fatalf("gemm %v: Validate: %v", p, err)
	}
	in, err := GEMM.Generate(vp, Gen{Dims: map[string]int{"m": 17, "k": 20, "n": 9}, Dist: DistUniform, Seed: 1})
	if err != nil {
		t.Fatalf("gemm %v seed=1: Generate: %v", vp, err)
	}
	if err := CheckInputs(GEMM, vp, in); err != nil {
		t.Fatalf("gemm %v seed=1: generated inputs refused: %v", vp, err)
	}
	with := func(name string, x *tensor.Tensor) map[string]*tensor.Tensor {
		out := map[string]*tensor.Tensor{}
		for k, v := range in {
			out[k] = v
		}
		out[name] = x
		return out
	}
	padded := in["a"].Clone()
	padded.SetBits(padded.Len()-1, 0x3c00) // row 31 of the last column: padding
	negZero := in["a"].Clone()
	negZero.SetBits(negZero.Len()-1, 0x8000)
	for _, tt := range []struct {
		what string
		p    Params
		in   map[string]*tensor.Tensor
		want string
	}{
		{"a as ND", vp, with("a", tensor.MustNew(tensor.Float16, 17, 20)), `shape [17 20] does not fit param "format_a" = FRACTAL_NZ`},
		{"a of the wrong C0", vp, with("a", tensor.MustNew(tensor.Float16, 2, 2, 16, 8)), `param "format_a" = FRACTAL_NZ`},
		{"a with a row fractal too many", vp, with("a", tensor.MustNew(tensor.Float16, 2, 3, 16, 16)), `param "format_a" = FRACTAL_NZ with m = 17`},
		{"a with one padding element 1", vp, with("a", padded), `is padding of param "format_a"`},
		{"a with one padding element −0", vp, with("a", negZero), `is padding of param "format_a"`},
		{"m off a's fractals", Params{"format_a": FormatFractalNZ, "format_out": FormatFractalNZ, "m": "40", "k": "20", "n": "9"}, in, `param "format_a" = FRACTAL_NZ with m = 40`},
		{"b ND against param k", Params{"format_a": FormatFractalNZ, "m": "17", "k": "21", "n": "9"}, in, `param "k"`},
	} {
		q, err := GEMM.Validate(tt.p)
		if err != nil {
			t.Fatalf("gemm %v: Validate: %v", tt.p, err)
		}
		err = CheckInputs(GEMM, q, tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("gemm %v (%s): CheckInputs = %v, want an error containing %q", q, tt.what, err, tt.want)
		}
	}
	if _, err := GEMM24.Validate(Params{"format_a": FormatFractalNZ}); err == nil || !strings.Contains(err.Error(), `param "format_a"`) {
		t.Errorf("gemm24 format_a=FRACTAL_NZ: Validate = %v, want an error naming param \"format_a\"", err)
	}
	if v, err := GEMM24.Validate(Params{"format_a": FormatND}); err != nil || v["format_a"] != "" {
		t.Errorf("gemm24 format_a=ND: Validate = %v, %v; want it accepted and left out", v, err)
	}
	for _, bad := range []string{"-1", "x", "1.5"} {
		if _, err := GEMM.Validate(Params{"m": bad}); err == nil || !strings.Contains(err.Error(), `param "m"`) {
			t.Errorf("gemm m=%s: Validate = %v, want an error naming param \"m\"", bad, err)
		}
	}
}
