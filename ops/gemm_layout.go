package ops

// The layouts of gemm's and gemm24's operands: each matrix operand is ND
// (row-major [rows, cols]) or FRACTAL_NZ, laid out exactly as transdata's
// ND → FRACTAL_NZ lays out its ND matrix ([ceil(cols/C0), ceil(rows/16),
// 16, C0], C0 = 32 bytes of the dtype, padding +0), so that a kernel that
// consumes and produces NZ, as Ascend's matmul does, is tested as it
// runs. The index maps are transdata's (reference.NDToNZ, NZToND): one
// definition of the layout.
//
// An NZ operand hides its logical extents behind its padding, so the
// params m, k, n say them (0: from the operands: an ND operand's own
// size, else the padded extent of the first NZ operand that carries it,
// in the order M: a, c; K: a, b; N: b, c). c follows format_out (it is the
// matrix out is added to, the same layout as out on Ascend); the int8
// scales are vectors and stay as they are.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// gemmFormats are the layouts a gemm operand may take.
var gemmFormats = []string{FormatND, FormatFractalNZ}

// GEMMLayout is the layout part of gemm's and gemm24's params: the
// formats of a, b and out (c follows out) and the logical extents the
// params set (0: taken from the operands).
type GEMMLayout struct {
	A, B, Out string
	M, K, N   int
}

// ND reports whether every operand is ND, the layout of every case made
// before the formats existed: such a case runs exactly as before.
func (l GEMMLayout) ND() bool {
	return l.A == FormatND && l.B == FormatND && l.Out == FormatND
}

// gemmLayoutSpecs are the layout params of gemm (withA: format_a too;
// gemm24's a stays ND) with the extent params extents.
func gemmLayoutSpecs(withA bool, extents []string) []ParamSpec {
	var specs []ParamSpec
	if withA {
		specs = append(specs, ParamSpec{Name: "format_a", Default: FormatND, Values: gemmFormats, Doc: "layout of a: ND, or FRACTAL_NZ as transdata lays out the ND matrix"})
	}
	outDoc := "layout of out: ND or FRACTAL_NZ, padding +0"
	if withA {
		outDoc = "layout of out (and of c): ND or FRACTAL_NZ, padding +0"
	}
	specs = append(specs,
		ParamSpec{Name: "format_b", Default: FormatND, Values: gemmFormats, Doc: "layout of b: ND or FRACTAL_NZ"},
		ParamSpec{Name: "format_out", Default: FormatND, Values: gemmFormats, Doc: outDoc})
	docs := map[string]string{
		"m": "rows M of a and out (0: from the operands; needed when only NZ operands carry M and it is not a multiple of 16)",
		"k": "reduction K (0: from the operands; needed when only NZ operands carry K and it is not a multiple of their padding)",
		"n": "columns N of b and out (0: from the operands; needed when only NZ operands carry N and it is not a multiple of C0)",
	}
	for _, name := range extents {
		specs = append(specs, ParamSpec{Name: name, Default: "0", Doc: docs[name], Examples: []string{"0", "1", "17", "33"}})
	}
	return specs
}

// validateLayout checks v's extent params (the formats are enumerations
// validate has checked) and writes them in canonical form.
func validateLayout(op Op, v Params, extents []string) error {
	for _, name := range extents {
		n, err := extentParam(op, name, v[name])
		if err != nil {
			return err
		}
		v[name] = strconv.Itoa(n)
	}
	return nil
}

// layoutOf reads validated params into a GEMMLayout.
func layoutOf(v Params) GEMMLayout {
	l := GEMMLayout{A: FormatND, B: FormatND, Out: FormatND}
	for _, name := range []string{"format_a", "format_b", "format_out", "m", "k", "n"} {
		if s, ok := v[name]; ok {
			l.set(name, s)
		}
	}
	return l
}

// set sets the field of layout param name from its value in Validate's
// canonical form; false when name is no layout param or v is not
// canonical (a format other than ND and FRACTAL_NZ, an extent not a
// plain integer in [0, MaxElements]).
func (l *GEMMLayout) set(name, v string) bool {
	switch name {
	case "format_a", "format_b", "format_out":
		if v != FormatND && v != FormatFractalNZ {
			return false
		}
		switch name {
		case "format_a":
			l.A = v
		case "format_b":
			l.B = v
		default:
			l.Out = v
		}
	case "m", "k", "n":
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 || x > tensor.MaxElements || strconv.Itoa(x) != v {
			return false
		}
		switch name {
		case "m":
			l.M = x
		case "k":
			l.K = x
		default:
			l.N = x
		}
	default:
		return false
	}
	return true
}

// GEMMNZShape is the FRACTAL_NZ shape of an ND [rows, cols] matrix of
// dtype d: [ceil(cols/C0), ceil(rows/16), 16, C0].
func GEMMNZShape(rows, cols int, d tensor.DType) []int {
	c0 := TransDataC0(d)
	return []int{ceilDivInt(cols, c0), ceilDivInt(rows, TransDataM0), TransDataM0, c0}
}

// operandShape is the shape of an ND [rows, cols] matrix of dtype d in
// format f.
func operandShape(f string, rows, cols int, d tensor.DType) []int {
	if f == FormatFractalNZ {
		return GEMMNZShape(rows, cols, d)
	}
	return []int{rows, cols}
}

// gemmCarrier is one operand's evidence of a logical extent: the exact
// size (ND), or a count of units (NZ: ceil(size/unit) = count).
type gemmCarrier struct {
	tensor, param string // the operand, and the param naming its format
	nz            bool
	v, unit       int
}

// resolveExtent returns the extent named name: the param when set, else
// the first ND carrier's size, else the first NZ carrier's padded size;
// then every carrier must agree with it (an ND one exactly, an NZ one in
// its count of units), else an error naming the param that disagrees.
func resolveExtent(op Op, name string, param int, cs []gemmCarrier) (int, error) {
	d, set := param, param != 0
	if !set {
		if i := slices.IndexFunc(cs, func(c gemmCarrier) bool { return !c.nz }); i >= 0 {
			d, set = cs[i].v, true
		} else if len(cs) > 0 {
			d, set = cs[0].v*cs[0].unit, true
		}
	}
	if !set {
		return 0, nil
	}
	for _, c := range cs {
		if !c.nz && c.v != d {
			return 0, fmt.Errorf("%s: input %q: %s = %d, but the case's %s is %d (from param %q or the other operands)", op.Name(), c.tensor, name, c.v, name, d, name)
		}
		if c.nz && ceilDivInt(d, c.unit) != c.v {
			return 0, fmt.Errorf("%s: input %q: %d fractals of %d for %s does not fit param %q = %s with %s = %d (want ceil(%d/%d) = %d; set param %q to the logical %s)",
				op.Name(), c.tensor, c.v, c.unit, name, c.param, FormatFractalNZ, name, d, d, c.unit, ceilDivInt(d, c.unit), name, name)
		}
	}
	return d, nil
}

// operandCarriers reads a matrix operand t of dtype d in format f (param
// naming f) as carriers of its rows and columns; a tensor of the wrong
// rank for its format is an error naming the param.
func operandCarriers(op Op, name, param, f string, t *tensor.Tensor, d tensor.DType) (rows, cols gemmCarrier, err error) {
	rows = gemmCarrier{tensor: name, param: param}
	cols = rows
	if f != FormatFractalNZ {
		if len(t.Shape) != 2 {
			return rows, cols, fmt.Errorf("%s: input %q: shape %v does not fit param %q = %s (want a matrix)", op.Name(), name, t.Shape, param, FormatND)
		}
		rows.v, cols.v = t.Shape[0], t.Shape[1]
		return rows, cols, nil
	}
	c0 := TransDataC0(d)
	s := t.Shape
	if len(s) != 4 || s[2] != TransDataM0 || s[3] != c0 {
		return rows, cols, fmt.Errorf("%s: input %q: shape %v does not fit param %q = %s (want [ceil(cols/%d), ceil(rows/16), 16, %d] for dtype %s)",
			op.Name(), name, s, param, FormatFractalNZ, c0, c0, d)
	}
	rows.nz, cols.nz = true, true
	rows.v, rows.unit = s[1], TransDataM0
	cols.v, cols.unit = s[0], c0
	return rows, cols, nil
}

// checkNZPadding fails unless every padding element of the NZ operand t
// (logical [rows, cols]) is +0, as transdata lays it out: a kernel may
// multiply whole fractals, as the cube does.
func checkNZPadding(op Op, name, param string, t *tensor.Tensor, rows, cols int) error {
	c0 := t.Shape[3]
	k1, m1 := t.Shape[0], t.Shape[1]
	bad := func(p, q, r, j int) error {
		i := ((p*m1+q)*TransDataM0+r)*c0 + j
		return fmt.Errorf("%s: input %q: element [%d %d %d %d] is padding of param %q = %s (rows %d, cols %d) and must be +0 as transdata writes it, got bits %#x",
			op.Name(), name, p, q, r, j, param, FormatFractalNZ, rows, cols, t.Bits(i))
	}
	for p := 0; p < k1; p++ {
		lanes := c0
		if p == k1-1 {
			lanes = cols - p*c0 // the last column's real lanes
		}
		for q := 0; q < m1; q++ {
			for r := 0; r < TransDataM0; r++ {
				base := ((p*m1+q)*TransDataM0 + r) * c0
				from := lanes
				if q*TransDataM0+r >= rows {
					from = 0 // a padding row: every lane
				}
				for j := from; j < c0; j++ {
					if t.Bits(base+j) != 0 {
						return bad(p, q, r, j)
					}
				}
			}
		}
	}
	return nil
}

// ToND returns the ND [rows, cols] matrix an NZ operand holds (transdata's
// FRACTAL_NZ → ND map), reading no padding.
func gemmToND(t *tensor.Tensor, rows, cols int) (*tensor.Tensor, error) {
	nd, err := tensor.New(t.DType, rows, cols)
	if err != nil {
		return nil, err
	}
	for i, j := range reference.NZToND(1, rows, cols, TransDataC0(t.DType)) {
		nd.SetBits(i, t.Bits(j))
	}
	return nd, nil
}

// gemmToNZ lays out the ND matrix t in FRACTAL_NZ (transdata's ND →
// FRACTAL_NZ map), padding +0.
func gemmToNZ(t *tensor.Tensor) (*tensor.Tensor, error) {
	rows, cols := t.Shape[0], t.Shape[1]
	nz, err := tensor.New(t.DType, GEMMNZShape(rows, cols, t.DType)...)
	if err != nil {
		return nil, err
	}
	for i, j := range reference.NDToNZ(1, rows, cols, TransDataC0(t.DType)) {
		if j >= 0 {
			nz.SetBits(i, t.Bits(j))
		}
	}
	return nz, nil
}

// GEMMLayoutToND returns the ND form of a gemm or gemm24 case in layout l
// with logical extents m, k, n: the NZ operands among in converted to ND
// (the others shared), and params with the formats ND and the extents
// cleared, so that the ND problem is the same product.
func GEMMLayoutToND(p Params, in map[string]*tensor.Tensor, l GEMMLayout, m, k, n int) (Params, map[string]*tensor.Tensor, error) {
	q := p.Clone()
	for _, name := range []string{"format_a", "format_b", "format_out"} {
		if _, ok := q[name]; ok {
			q[name] = FormatND
		}
	}
	for _, name := range []string{"m", "k", "n"} {
		if _, ok := q[name]; ok {
			q[name] = "0"
		}
	}
	out := make(map[string]*tensor.Tensor, len(in))
	for name, t := range in {
		out[name] = t
	}
	for _, o := range []struct {
		name, format string
		rows, cols   int
	}{{"a", l.A, m, k}, {"b", l.B, k, n}, {"c", l.Out, m, n}} {
		t := in[o.name]
		if t == nil || o.format != FormatFractalNZ {
			continue
		}
		nd, err := gemmToND(t, o.rows, o.cols)
		if err != nil {
			return nil, nil, err
		}
		out[o.name] = nd
	}
	return q, out, nil
}

// nzExpected maps the Expected of an ND [m, n] output of dtype d through
// the FRACTAL_NZ layout: each element's outcome moves to its place, and a
// padding element accepts +0 alone.
func nzExpected(nd *bound.Expected, m, n int, d tensor.DType, num tensor.Numerics) *bound.Expected {
	nd.Materialize()
	idx := reference.NDToNZ(1, m, n, TransDataC0(d))
	e := bound.NewExpected(len(idx))
	for i, j := range idx {
		switch {
		case j < 0:
			e.SetExact(i, 0, d, num)
		case nd.Exact != nil && nd.Exact[j]:
			e.SetExact(i, nd.Rounded[j], d, num)
		default:
			e.Ref[i], e.Bound[i], e.Alt[i] = nd.Ref[j], nd.Bound[j], nd.Alt[j]
		}
	}
	return e
}

// gemmShape returns M, K, N of gemm inputs in cfg's layout (gemmDims for
// the all-ND layout with no extent set, whose messages it keeps).
func gemmShape(op Op, cfg GEMMConfig, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	l := cfg.Layout
	if l.ND() && l.M == 0 && l.K == 0 && l.N == 0 {
		return gemmDims(op, in)
	}
	for _, name := range []string{"a", "b"} {
		if in[name] == nil {
			return 0, 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), name)
		}
	}
	aR, aC, err := operandCarriers(op, "a", "format_a", l.A, in["a"], cfg.Mode.In)
	if err != nil {
		return 0, 0, 0, err
	}
	bR, bC, err := operandCarriers(op, "b", "format_b", l.B, in["b"], cfg.Mode.In)
	if err != nil {
		return 0, 0, 0, err
	}
	ms, ks, ns := []gemmCarrier{aR}, []gemmCarrier{aC, bR}, []gemmCarrier{bC}
	if c := in["c"]; c != nil && cfg.Beta != 0 {
		cR, cC, err := operandCarriers(op, "c", "format_out", l.Out, c, cfg.Mode.Out)
		if err != nil {
			return 0, 0, 0, err
		}
		ms, ns = append(ms, cR), append(ns, cC)
	}
	if m, err = resolveExtent(op, "m", l.M, ms); err != nil {
		return 0, 0, 0, err
	}
	if k, err = resolveExtent(op, "k", l.K, ks); err != nil {
		return 0, 0, 0, err
	}
	if n, err = resolveExtent(op, "n", l.N, ns); err != nil {
		return 0, 0, 0, err
	}
	return m, k, n, nil
}

// GEMMShape returns M, K, N of a gemm case: its params p (validated) and
// inputs in, in any layout (GEMMDims reads ND operands only).
func GEMMShape(p Params, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	return gemmShape(gemm{}, gemmConfig(p), in)
}

// genExtent is the extent Generate uses for a size carried by the
// operands of formats (in carrier order) with NZ units units: the
// generation size, or the param when set (which the size must equal); with
// neither an ND carrier nor the param, the size rounded up to the first
// carrier's unit, so that no logical element hides in padding the
// operands cannot tell from data.
func genExtent(op Op, g Gen, name string, param int, formats []string, units []int) (int, error) {
	v, err := dim(op, g, name)
	if err != nil {
		return 0, err
	}
	if param != 0 {
		if v != param {
			return 0, fmt.Errorf("%s: generation size %q = %d differs from param %q = %d", op.Name(), name, v, name, param)
		}
		return v, nil
	}
	if len(formats) == 0 || slices.Contains(formats, FormatND) {
		return v, nil
	}
	return ceilDivInt(v, units[0]) * units[0], nil
}

// layOut lays out the generated ND operands of in whose format is NZ.
func layOut(op Op, in map[string]*tensor.Tensor, formats map[string]string) error {
	for name, f := range formats {
		if t := in[name]; t != nil && f == FormatFractalNZ {
			nz, err := gemmToNZ(t)
			if err != nil {
				return fmt.Errorf("%s: %w", op.Name(), err)
			}
			in[name] = nz
		}
	}
	return nil
}

// checkLayoutPadding holds the NZ operands among in to +0 padding; one
// that does not meet its spec among specs is left to CheckInputs, which
// names what it lacks.
func checkLayoutPadding(op Op, in map[string]*tensor.Tensor, operands []layoutOperand, specs []TensorSpec) error {
	for _, o := range operands {
		t := in[o.name]
		if t == nil || o.format != FormatFractalNZ {
			continue
		}
		i := slices.IndexFunc(specs, func(s TensorSpec) bool { return s.Name == o.name })
		if i < 0 || t.DType != specs[i].DType || !t.SameShape(specs[i].Shape) {
			continue
		}
		if err := checkNZPadding(op, o.name, o.param, t, o.rows, o.cols); err != nil {
			return err
		}
	}
	return nil
}

// layoutOperand is one matrix operand's name, format, format param and
// logical extent.
type layoutOperand struct {
	name, format, param string
	rows, cols          int
}

// Fit makes a drawn gemm case legal (CaseFitter): an extent param m, k or
// n drawn non-zero becomes the dim of its name, so the operands are made
// at the size it says (one that differs from an ND operand's own size is
// an input error): drawn apart, about 7 gemm draws in 8 were discarded.
func (gemm) Fit(p Params, dims map[string]int, _ func(string) int) {
	fitExtents(p, dims, "m", "k", "n")
}

// Fit makes a drawn gemm24 case legal, as gemm's Fit does for its n.
func (gemm24) Fit(p Params, dims map[string]int, _ func(string) int) { fitExtents(p, dims, "n") }

// fitExtents sets the dim of each extent param named to the param's value
// when that is set (non-zero): an op that takes an extent as a param
// generates its tensors at that size.
func fitExtents(p Params, dims map[string]int, names ...string) {
	for _, name := range names {
		if n, err := strconv.Atoi(p[name]); err == nil && n > 0 {
			dims[name] = n
		}
	}
}
