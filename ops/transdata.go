package ops

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// TransData is the transdata contract.
var TransData = Register(transData{})

// transdata: x → y, the layout conversion Ascend puts in front of nearly
// every operator, bit for bit. NCHW [N,C,H,W] or NHWC [N,H,W,C] ↔ NC1HWC0
// [N,C1,H,W,C0] (C1 = ceil(C/C0), channel c at (c / C0, c mod C0)); ND
// [...,M,K] ↔ FRACTAL_NZ [...,K1,M1,16,C0] (K1 = ceil(K/C0), M1 =
// ceil(M/16), (m,k) at (k / C0, m / 16, m mod 16, k mod C0)). C0 is 32
// bytes of the dtype. Padding elements of the destination are +0; the
// reverse conversions take the original extent as params (c; m and k;
// 0 means none of the source is padding) and never read the source's
// padding. Values move as bit patterns, so
// every element is judged exactly.
type transData struct{}

// The formats transdata converts between (docs/operators.md, transdata).
const (
	FormatND        = "ND"
	FormatNCHW      = "NCHW"
	FormatNHWC      = "NHWC"
	FormatNC1HWC0   = "NC1HWC0"
	FormatFractalNZ = "FRACTAL_NZ"
)

// TransDataM0 is the row count of a FRACTAL_NZ fractal (the cube's 16).
const TransDataM0 = 16

var (
	transDataFormats = []string{FormatND, FormatNCHW, FormatNHWC, FormatNC1HWC0, FormatFractalNZ}
	transDataDTypes  = []string{"fp16", "bf16", "fp32", "int8"}
	// transDataPairs are the legal conversions, source → destination.
	transDataPairs = [][2]string{
		{FormatNCHW, FormatNC1HWC0}, {FormatNHWC, FormatNC1HWC0},
		{FormatNC1HWC0, FormatNCHW}, {FormatNC1HWC0, FormatNHWC},
		{FormatND, FormatFractalNZ}, {FormatFractalNZ, FormatND},
	}
)

// TransDataPairs lists the legal conversions as "SRC→DST", for listings
// (npuverify ops) and error messages.
func TransDataPairs() []string {
	out := make([]string, len(transDataPairs))
	for i, p := range transDataPairs {
		out[i] = p[0] + "→" + p[1]
	}
	return out
}

// TransDataC0 is the C0 of dtype d: 32 bytes of it (fp16/bf16 16, fp32 8,
// int8 32).
func TransDataC0(d tensor.DType) int { return 32 / d.Size() }

func (transData) Name() string { return "transdata" }

func (transData) Doc() string {
	return "layout conversion, bit for bit (padding +0; C0 = 32 bytes of dtype); legal pairs: " + strings.Join(TransDataPairs(), ", ")
}

func (transData) ParamSpecs() []ParamSpec {
	return []ParamSpec{
		{Name: "src_format", Default: FormatNCHW, Values: transDataFormats, Doc: "layout of x"},
		{Name: "dst_format", Default: FormatNC1HWC0, Values: transDataFormats, Doc: "layout of y; legal pairs: " + strings.Join(TransDataPairs(), ", ")},
		{Name: "dtype", Default: "fp16", Values: transDataDTypes, Doc: "dtype of x and y"},
		{Name: "c", Default: "0", Doc: "channels C of the NCHW/NHWC side (4-D pairs; 0: x's own, C1·C0 for an NC1HWC0 source)", Examples: []string{"0", "1", "7", "15", "16", "17", "32", "33"}},
		{Name: "m", Default: "0", Doc: "rows M of the ND side (ND/FRACTAL_NZ pairs; 0: x's own, M1·16 for an NZ source)", Examples: []string{"0", "1", "15", "16", "17", "33"}},
		{Name: "k", Default: "0", Doc: "columns K of the ND side (ND/FRACTAL_NZ pairs; 0: x's own, K1·C0 for an NZ source)", Examples: []string{"0", "1", "7", "8", "16", "31", "33"}},
	}
}

// DimSpecs: n, c, h, w shape the NCHW/NHWC side, b (batch, optional), m,
// k the ND side; which apply depends on the formats, so every one is
// optional and Generate names a missing one. A reverse conversion takes
// its c (m, k) from the param, which a dim of that name must equal.
func (transData) DimSpecs() []DimSpec {
	return []DimSpec{
		{Name: "n", Doc: "batch N (NCHW/NHWC/NC1HWC0)", Optional: true},
		{Name: "c", Doc: "channels C (NCHW/NHWC/NC1HWC0; the param c for an NC1HWC0 source)", Optional: true},
		{Name: "h", Doc: "height H (NCHW/NHWC/NC1HWC0)", Optional: true},
		{Name: "w", Doc: "width W (NCHW/NHWC/NC1HWC0)", Optional: true},
		{Name: "b", Doc: "leading batch of ND/FRACTAL_NZ (absent: rank 2)", Optional: true},
		{Name: "m", Doc: "rows M (ND/FRACTAL_NZ; the param m for an NZ source)", Optional: true},
		{Name: "k", Doc: "columns K (ND/FRACTAL_NZ; the param k for an NZ source)", Optional: true},
	}
}

func (transData) Dists() []string {
	return []string{DistUniform, DistNormal, DistLarge, DistSpecial}
}

// transDataPlan is validated params, parsed.
type transDataPlan struct {
	src, dst string
	d        tensor.DType
	c0       int
	c, m, k  int // the extent params; 0: x's own
}

// fourD reports whether the conversion is between NCHW/NHWC and NC1HWC0.
func (pl transDataPlan) fourD() bool { return pl.src != FormatND && pl.src != FormatFractalNZ }

// toFrac reports whether the destination is the fractal layout.
func (pl transDataPlan) toFrac() bool { return pl.dst == FormatNC1HWC0 || pl.dst == FormatFractalNZ }

// nhwc reports whether the plain side is NHWC.
func (pl transDataPlan) nhwc() bool { return pl.src == FormatNHWC || pl.dst == FormatNHWC }

// extentParam parses one extent param: a non-negative integer up to
// tensor.MaxElements.
func extentParam(op Op, name, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > tensor.MaxElements {
		return 0, fmt.Errorf("%s: param %q: invalid value %q (want an integer in [0, %d])", op.Name(), name, v, tensor.MaxElements)
	}
	return n, nil
}

// Validate holds the pair to the legal ones (an illegal pair names
// dst_format) and the extents to their pair: c belongs to the NCHW/NHWC ↔
// NC1HWC0 pairs, m and k to ND ↔ FRACTAL_NZ, and one set on another pair
// is an error naming it. An extent of 0 (the default) is x's own: for a
// reverse conversion, whose source hides the original extent behind its
// padding, the padded one (C1·C0, M1·16, K1·C0), so the extent is the
// param that says how much of the source is padding. Extents are written
// back in canonical form.
func (op transData) Validate(p Params) (Params, error) {
	v, err := validate(op, p)
	if err != nil {
		return nil, err
	}
	src, dst := v["src_format"], v["dst_format"]
	if !slices.Contains(transDataPairs, [2]string{src, dst}) {
		return nil, fmt.Errorf("%s: param %q: %s → %s is not a legal conversion (legal: %s)", op.Name(), "dst_format", src, dst, strings.Join(TransDataPairs(), ", "))
	}
	nd := src == FormatND || src == FormatFractalNZ
	for _, name := range []string{"c", "m", "k"} {
		n, err := extentParam(op, name, v[name])
		if err != nil {
			return nil, err
		}
		if n != 0 && nd == (name == "c") {
			return nil, fmt.Errorf("%s: param %q = %d: applies only to the %s pairs, not %s → %s", op.Name(), name, n,
				map[bool]string{true: "NCHW/NHWC ↔ NC1HWC0", false: "ND ↔ FRACTAL_NZ"}[name == "c"], src, dst)
		}
		v[name] = strconv.Itoa(n)
	}
	return v, nil
}

// transDataPlanOf parses validated params.
func transDataPlanOf(p Params) transDataPlan {
	d, _ := tensor.ParseDType(p["dtype"])
	if !d.Valid() {
		d = tensor.Float16
	}
	pl := transDataPlan{src: p["src_format"], dst: p["dst_format"], d: d, c0: TransDataC0(d)}
	for name, at := range map[string]*int{"c": &pl.c, "m": &pl.m, "k": &pl.k} {
		if s, ok := p[name]; ok {
			if n, err := strconv.Atoi(s); err == nil {
				*at = n
			}
		}
	}
	return pl
}

// extent is a size that is both a param and a dim: the param when set
// (not 0), which the dim, if given, must equal.
func (op transData) extent(g Gen, name string, param int) (int, error) {
	if param == 0 {
		return dim(op, g, name)
	}
	if v, ok := g.Dims[name]; ok && v != param {
		return 0, fmt.Errorf("%s: generation size %q = %d differs from param %q = %d", op.Name(), name, v, name, param)
	}
	return param, nil
}

// transDataPadBits is what generated inputs hold in the source's padding
// (which the contract says is never read): a quiet NaN, −1 for int8.
func transDataPadBits(d tensor.DType) uint64 {
	switch d {
	case tensor.Float16:
		return 0x7E00
	case tensor.BFloat16:
		return 0x7FC0
	case tensor.Float32:
		return 0x7FC00000
	}
	return 0xFF
}

// Generate draws the logical tensor (the plain side) from the dist; for a
// reverse conversion it lays it out in the fractal format with every
// padding element NaN (−1 for int8), so that a kernel reading padding
// shows.
func (op transData) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	if err := checkDist(op, g.Dist); err != nil {
		return nil, err
	}
	pl := transDataPlanOf(p)
	var plain, fracShape []int
	var idx func() []int
	if pl.fourD() {
		var n, c, h, w int
		var err error
		if n, err = dim(op, g, "n"); err != nil {
			return nil, err
		}
		if c, err = op.extent(g, "c", pl.c); err != nil {
			return nil, err
		}
		if pl.src == FormatNC1HWC0 && pl.c == 0 {
			c = ceilDivInt(c, pl.c0) * pl.c0 // c = 0: no padding lanes
		}
		if h, err = dim(op, g, "h"); err != nil {
			return nil, err
		}
		if w, err = dim(op, g, "w"); err != nil {
			return nil, err
		}
		plain = []int{n, c, h, w}
		if pl.nhwc() {
			plain = []int{n, h, w, c}
		}
		fracShape = []int{n, ceilDivInt(c, pl.c0), h, w, pl.c0}
		idx = func() []int { return reference.NCHWToNC1HWC0(n, c, h, w, pl.c0, pl.nhwc()) }
	} else {
		var m, k int
		var err error
		if m, err = op.extent(g, "m", pl.m); err != nil {
			return nil, err
		}
		if k, err = op.extent(g, "k", pl.k); err != nil {
			return nil, err
		}
		if pl.src == FormatFractalNZ {
			// m, k = 0: no padding rows or lanes.
			if pl.m == 0 {
				m = ceilDivInt(m, TransDataM0) * TransDataM0
			}
			if pl.k == 0 {
				k = ceilDivInt(k, pl.c0) * pl.c0
			}
		}
		batch, lead := 1, []int(nil)
		if b, ok := g.Dims["b"]; ok {
			if b < 0 {
				return nil, fmt.Errorf("%s: generation size %q = %d is negative", op.Name(), "b", b)
			}
			batch, lead = b, []int{b}
		}
		plain = append(slices.Clone(lead), m, k)
		fracShape = append(slices.Clone(lead), ceilDivInt(k, pl.c0), ceilDivInt(m, TransDataM0), TransDataM0, pl.c0)
		idx = func() []int { return reference.NDToNZ(batch, m, k, pl.c0) }
	}
	x, err := Fill(g.Rand(), g.Dist, pl.d, plain...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	if pl.toFrac() {
		return map[string]*tensor.Tensor{"x": x}, nil
	}
	// A reverse conversion: the source is x laid out in the fractal format.
	if _, err := tensor.NumElements(fracShape); err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	src, err := tensor.New(pl.d, fracShape...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	pad := transDataPadBits(pl.d)
	for i, j := range idx() {
		if j < 0 {
			src.SetBits(i, pad)
		} else {
			src.SetBits(i, x.Bits(j))
		}
	}
	return map[string]*tensor.Tensor{"x": src}, nil
}

// ceilDivInt is ceil(a/b) for a ≥ 0, b > 0.
func ceilDivInt(a, b int) int { return (a + b - 1) / b }

// transDataShapes checks x against the source format and returns the
// destination shape and the index map builder. A shape that does not fit
// the source format is an error naming the param it contradicts.
func (op transData) transDataShapes(pl transDataPlan, x *tensor.Tensor) (dst []int, idx func() []int, err error) {
	s := x.Shape
	bad := func(param, format string) error {
		return fmt.Errorf("%s: input %q: shape %v does not fit param %q = %s (want %s)", op.Name(), "x", s, param, pl.src, format)
	}
	switch pl.src {
	case FormatNCHW, FormatNHWC:
		if len(s) != 4 {
			return nil, nil, bad("src_format", "["+strings.Join(strings.Split(pl.src, ""), ",")+"]")
		}
		n, c, h, w := s[0], s[1], s[2], s[3]
		if pl.src == FormatNHWC {
			h, w, c = s[1], s[2], s[3]
		}
		if pl.c != 0 && pl.c != c {
			return nil, nil, fmt.Errorf("%s: input %q: shape %v: C = %d does not fit param %q = %d", op.Name(), "x", s, c, "c", pl.c)
		}
		return []int{n, ceilDivInt(c, pl.c0), h, w, pl.c0}, func() []int { return reference.NCHWToNC1HWC0(n, c, h, w, pl.c0, pl.nhwc()) }, nil
	case FormatNC1HWC0:
		if len(s) != 5 || s[4] != pl.c0 {
			return nil, nil, bad("src_format", fmt.Sprintf("[N,C1,H,W,C0] with C0 = %d for dtype %s", pl.c0, pl.d))
		}
		c := pl.c
		if c == 0 {
			c = s[1] * pl.c0
		}
		if want := ceilDivInt(c, pl.c0); s[1] != want {
			return nil, nil, fmt.Errorf("%s: input %q: shape %v: C1 = %d does not fit param %q = %d (want C1 = ceil(%d/%d) = %d)", op.Name(), "x", s, s[1], "c", c, c, pl.c0, want)
		}
		n, h, w := s[0], s[2], s[3]
		dst := []int{n, c, h, w}
		if pl.dst == FormatNHWC {
			dst = []int{n, h, w, c}
		}
		return dst, func() []int { return reference.NC1HWC0ToNCHW(n, c, h, w, pl.c0, pl.nhwc()) }, nil
	case FormatND:
		if len(s) < 2 {
			return nil, nil, bad("src_format", "[...,M,K], rank ≥ 2")
		}
		r := len(s)
		batch, _ := tensor.NumElements(s[:r-2])
		m, k := s[r-2], s[r-1]
		if pl.m != 0 && pl.m != m {
			return nil, nil, fmt.Errorf("%s: input %q: shape %v: M = %d does not fit param %q = %d", op.Name(), "x", s, m, "m", pl.m)
		}
		if pl.k != 0 && pl.k != k {
			return nil, nil, fmt.Errorf("%s: input %q: shape %v: K = %d does not fit param %q = %d", op.Name(), "x", s, k, "k", pl.k)
		}
		dst := append(slices.Clone(s[:r-2]), ceilDivInt(k, pl.c0), ceilDivInt(m, TransDataM0), TransDataM0, pl.c0)
		return dst, func() []int { return reference.NDToNZ(batch, m, k, pl.c0) }, nil
	}
	// FRACTAL_NZ
	r := len(s)
	if r < 4 || s[r-1] != pl.c0 || s[r-2] != TransDataM0 {
		return nil, nil, bad("src_format", fmt.Sprintf("[...,K1,M1,16,C0] with C0 = %d for dtype %s", pl.c0, pl.d))
	}
	m, k := pl.m, pl.k
	if m == 0 {
		m = s[r-3] * TransDataM0
	}
	if k == 0 {
		k = s[r-4] * pl.c0
	}
	if want := ceilDivInt(m, TransDataM0); s[r-3] != want {
		return nil, nil, fmt.Errorf("%s: input %q: shape %v: M1 = %d does not fit param %q = %d (want M1 = ceil(%d/16) = %d)", op.Name(), "x", s, s[r-3], "m", m, m, want)
	}
	if want := ceilDivInt(k, pl.c0); s[r-4] != want {
		return nil, nil, fmt.Errorf("%s: input %q: shape %v: K1 = %d does not fit param %q = %d (want K1 = ceil(%d/%d) = %d)", op.Name(), "x", s, s[r-4], "k", k, k, pl.c0, want)
	}
	batch, _ := tensor.NumElements(s[:r-4])
	return append(slices.Clone(s[:r-4]), m, k), func() []int { return reference.NZToND(batch, m, k, pl.c0) }, nil
}

func (op transData) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	x := in["x"]
	if x == nil {
		return nil, fmt.Errorf("%s: input %q is missing", op.Name(), "x")
	}
	pl := transDataPlanOf(p)
	if _, _, err := op.transDataShapes(pl, x); err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "x", DType: pl.d, Shape: slices.Clone(x.Shape)}}, nil
}

func (op transData) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	x := in["x"]
	if x == nil {
		return nil, fmt.Errorf("%s: input %q is missing", op.Name(), "x")
	}
	pl := transDataPlanOf(p)
	dst, _, err := op.transDataShapes(pl, x)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "y", DType: pl.d, Shape: dst}}, nil
}

// Expect: every element of y is a copy of one element of x (or +0
// padding), which the reference index map names (reference.NCHWToNC1HWC0
// and the rest), so y is one all-exact Expected over those bits under
// copyNumerics: a value bit for bit, −0 ≠ +0, a padding element +0 only,
// a NaN as any NaN (bound.Identical: the bound policy does not judge
// payloads; the exact policy against a golden, which the emulator's copy
// fixes, does).
func (op transData) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	pl := transDataPlanOf(p)
	x := in["x"]
	dst, idx, err := op.transDataShapes(pl, x)
	if err != nil {
		return nil, err
	}
	y, err := tensor.New(pl.d, dst...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	if !transDataDirect(pl, x, y) {
		gatherBits(y, x, idx())
	}
	return map[string]*bound.Expected{"y": bound.NewExactFrom(y.Len(), pl.d, copyNumerics, y.Float64sFrom)}, nil
}

// transDataDirect sets y, x converted from NCHW or NHWC to NC1HWC0, by
// gatherToNC1HWC0 (the index map's gather without the map), and reports
// whether it did: false for the other conversions.
func transDataDirect(pl transDataPlan, x, y *tensor.Tensor) bool {
	if pl.src != FormatNCHW && pl.src != FormatNHWC || pl.dst != FormatNC1HWC0 || len(x.Shape) != 4 {
		return false
	}
	s := x.Shape
	n, c, h, w := s[0], s[1], s[2], s[3]
	if pl.src == FormatNHWC {
		h, w, c = s[1], s[2], s[3]
	}
	return gatherToNC1HWC0(y, x, n, c, h, w, pl.c0, pl.nhwc())
}

// Fit makes a drawn transdata case legal (CaseFitter): an illegal pair
// keeps its source and takes one of the source's legal destinations; the
// extent params and dims of the other pair family are removed; the dims
// the pair needs are drawn when missing; and a set extent param becomes
// its dim too, so that an extent drawn from its Examples (C0 − 1, C0,
// C0 + 1, …) is the case's size, as Generate requires.
func (transData) Fit(p Params, dims map[string]int, size func(dim string) int) {
	src, dst := p["src_format"], p["dst_format"]
	if src == "" {
		src = FormatNCHW
	}
	if dst == "" {
		dst = FormatNC1HWC0
	}
	if !slices.Contains(transDataPairs, [2]string{src, dst}) {
		var partners []string
		for _, pr := range transDataPairs {
			if pr[0] == src {
				partners = append(partners, pr[1])
			}
		}
		if len(partners) == 0 {
			return // an unknown source: Validate names it
		}
		p["dst_format"] = partners[max(slices.Index(transDataFormats, dst), 0)%len(partners)]
	}
	nd := src == FormatND || src == FormatFractalNZ
	own, other := []string{"n", "c", "h", "w"}, []string{"b", "m", "k"}
	if nd {
		own, other = []string{"m", "k"}, []string{"n", "c", "h", "w"}
	}
	for _, name := range other {
		delete(dims, name)
	}
	for _, name := range []string{"c", "m", "k"} {
		if (name == "c") == nd {
			delete(p, name)
		}
	}
	for _, name := range own {
		if _, ok := dims[name]; !ok {
			dims[name] = size(name)
		}
	}
	fitExtents(p, dims, "c", "m", "k")
}
