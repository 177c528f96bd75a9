package ops

// gemm's Expected: the reference (package reference) and each element's
// outcome (gemm_bound.go), whole or a block of rows at a time.

import (
	"fmt"
	"math"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// Expect computes the float64 reference and, per element, the set of
// results every legal implementation of the evaluation model may return,
// whatever its summation order or tiling (the bound is derived in gemm_bound.go).
//
// In another layout (gemm_layout.go) the NZ operands are converted to ND,
// the ND problem is judged, and an NZ out's Expected is the ND one mapped
// through the layout, each padding element +0 exactly.
func (op gemm) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	return op.expectLayout(p, in, num, false)
}

// expectLayout is Expect (interval as for expect) in any layout.
func (op gemm) expectLayout(p Params, in map[string]*tensor.Tensor, num tensor.Numerics, interval bool) (map[string]*bound.Expected, error) {
	if l := gemmConfig(p).Layout; !l.ND() {
		pND, inND, m, n, err := op.toND(p, in)
		if err != nil {
			return nil, err
		}
		e, err := op.expect(pND, inND, num, interval)
		if err != nil {
			return nil, err
		}
		if l.Out == FormatFractalNZ {
			e["out"] = nzExpected(e["out"], m, n, gemmConfig(p).Mode.Out, num)
		}
		return e, nil
	}
	return op.expect(p, in, num, interval)
}

// toND checks in against p and returns the case's ND form
// (GEMMLayoutToND) and its M and N.
func (op gemm) toND(p Params, in map[string]*tensor.Tensor) (Params, map[string]*tensor.Tensor, int, int, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, nil, 0, 0, err
	}
	cfg := gemmConfig(p)
	m, k, n, err := gemmShape(op, cfg, in)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	pND, inND, err := GEMMLayoutToND(p, in, cfg.Layout, m, k, n)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("%s: %w", op.Name(), err)
	}
	return pND, inND, m, n, nil
}

// expect is Expect; interval makes every element take the interval path
// (element), for the test that the fast path (fastElement) agrees with it.
func (op gemm) expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics, interval bool) (map[string]*bound.Expected, error) {
	g, err := op.newExpecter(p, in, num, interval)
	if err != nil {
		return nil, err
	}
	e := bound.NewExpected(g.m * g.n)
	g.rows(e, 0, g.m)
	return map[string]*bound.Expected{"out": e}, nil
}

// The blocks of ExpectBlocks. Each block of rows costs the reference a
// packing of all of B (and |B| for S) again, multiplied by that block's
// rows only: at n = 4096, blocks of 2^18 elements (64 rows) packed B 64
// times, 3.9 s of a 9.8 s run's CPU, and blocks of 256 rows still 16
// times. What fewer blocks cost is memory: a block's Expected (17 bytes an
// element) is held while the block is judged. So a block holds as many
// rows as have their Expected fit in a third of the bytes of the case's
// own tensors, and at least gemmBlockElems elements (2 MiB of Expected)
// so that a small case is not cut into slivers; the rows are then shared
// evenly among the blocks.
//
// Measured when the reference packed B as float64 (4096³, three runs
// each): 256 rows, 4.5–4.9 s and 157 MiB peak for 96 MiB of tensors;
// half the tensor bytes (683 rows), 3.9–4.0 s and 188 MiB; all of them
// (1366 rows), 3.6–4.0 s and 240 MiB. It packs an fp16 B as fp16 now
// (dgemm.Mul), a quarter of the bytes, and a third of the tensor bytes
// (456 rows) ran as fast as half (3.35–3.51 against 3.40–3.66 s) and
// peaked at 163 against 183 MiB; at 1024³, blocks of 2^17 elements (eight
// of 128 rows) against 2^18 peak at 22.4–23.1 against 24.8–25.7 MiB for
// 4% more time (min of eleven, 2026-12-05). The packing's share falls as
// one over the rows, so a block of gemmBlockMaxRows has it near 4%: more
// rows than that would only hold more memory, which a case of gigabytes
// of tensors would feel. (For fp16 operands on a CPU with AVX-512, d and
// S now come from one pass that reads B where it lies and packs only the
// block's rows of A, gemmMag32.withD; the blocks are sized as before.)
//
// Variables for the test that cuts small outputs into many blocks.
var (
	gemmBlockElems = 1 << 17
	gemmBlockFit   = true // blocks grow to a third of the case's tensor bytes
)

// gemmExpectedBytes is what bound.Expected holds per element: Ref and
// Bound (float64) and Alt (one byte).
const gemmExpectedBytes = 17

// gemmBlockMaxRows is the most rows a block grows to for the tensor bytes.
const gemmBlockMaxRows = 1024

// gemmBlockRows is how many rows of an [m,n] output one block of
// ExpectBlocks covers, for a case whose inputs and outputs hold
// tensorBytes: as many as have their Expected fit in tensorBytes/3 (at
// most gemmBlockMaxRows), or gemmBlockElems elements' worth (at least a
// row) if that is more, at most m; then the fewest rows that cut m into
// as many blocks.
func gemmBlockRows(m, n, tensorBytes int) int {
	n = max(n, 1)
	rows := gemmBlockElems / n
	if gemmBlockFit {
		rows = max(rows, min(gemmBlockMaxRows, tensorBytes/3/(gemmExpectedBytes*n)))
	}
	rows = max(1, min(m, rows))
	if m <= 0 {
		return rows
	}
	blocks := (m + rows - 1) / rows
	return (m + blocks - 1) / blocks
}

// ExpectBlocks is Expect a block of whole rows of out at a time
// (gemmBlockRows), one Expected reused for every block: the blocks,
// concatenated, are Expect's bit for bit
// (TestGEMMExpectBlocksMatchesExpect).
//
// In another layout: an ND out's blocks are those of the ND problem; an NZ
// out is one block (Expect's), its rows being spread over every fractal
// column.
func (op gemm) ExpectBlocks(p Params, in map[string]*tensor.Tensor, num tensor.Numerics, yield func(output string, e *bound.Expected) error) error {
	if l := gemmConfig(p).Layout; !l.ND() {
		if l.Out == FormatFractalNZ {
			e, err := op.Expect(p, in, num)
			if err != nil {
				return err
			}
			return yield("out", e["out"])
		}
		pND, inND, _, _, err := op.toND(p, in)
		if err != nil {
			return err
		}
		return op.ExpectBlocks(pND, inND, num, yield)
	}
	g, err := op.newExpecter(p, in, num, false)
	if err != nil {
		return err
	}
	tensorBytes := g.m * g.n * gemmConfig(p).Mode.Out.Size()
	for _, t := range in {
		tensorBytes += t.Len() * t.DType.Size()
	}
	rows := gemmBlockRows(g.m, g.n, tensorBytes)
	buf := bound.NewExpected(rows * g.n)
	for r0 := 0; r0 < g.m; r0 += rows {
		r1 := min(r0+rows, g.m)
		e := buf.Window(0, (r1-r0)*g.n)
		g.rows(e, r0, r1)
		if err := yield("out", e); err != nil {
			return err
		}
	}
	if g.m == 0 { // an empty output is one empty block
		return yield("out", bound.NewExpected(0))
	}
	return nil
}

// gemmExpecter holds what every row of gemm's Expected is computed from.
type gemmExpecter struct {
	m, k, n   int
	a, b      *tensor.Tensor
	c, sa, sb []float64 // nil when beta = 0, or the mode has no scales
	ev        *gemmEval
	dense     *gemmDense
	mag       *gemmMag32 // S in fp32 (gemm_mag.go); nil: S from the reference
}

// newExpecter checks in and prepares the rows' evaluation (interval as
// for expect).
func (op gemm) newExpecter(p Params, in map[string]*tensor.Tensor, num tensor.Numerics, interval bool) (*gemmExpecter, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	cfg := gemmConfig(p)
	m, k, n, _ := gemmDims(op, in)
	g := &gemmExpecter{m: m, k: k, n: n, a: in["a"], b: in["b"]}
	if cfg.Beta != 0 {
		g.c = in["c"].Float64s()
	}
	if cfg.Mode.Int8() {
		g.sa, g.sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
	}
	ev, err := newGEMMEval(cfg, k, num)
	if err != nil {
		return nil, err
	}
	if interval {
		ev.plain = false
	}
	g.ev = ev
	// The reference packs a and b straight from the tensors; float64
	// copies of them are made only if some element needs the partial-sum
	// overflow test.
	g.dense = denseTensors(g.a, g.b)
	if gemmMagFP32(cfg.Mode.In, k) {
		ev.magUp = gemmMagUpFactor32(k)
		g.mag = newGEMMMag32(g.a, g.b, k, n)
	}
	return g, nil
}

// rows sets e, which describes output rows [r0, r1) (element (i, j) at
// (i−r0)·n + j), to their expected outcomes.
func (g *gemmExpecter) rows(e *bound.Expected, r0, r1 int) {
	n := g.n
	// d and s go straight into Ref and Bound: each element reads its own
	// d and s before it writes its outcome over them.
	d, s := e.Ref, e.Bound
	// Rows over all cores: each element reads only the inputs and its own
	// d, s, and writes only its own entries.
	grain := max(1, (1<<12)/max(n, 1))
	switch {
	case g.mag == nil:
		reference.MatMulTensorRows(g.a, g.b, r0, r1, d, s)
	case !g.mag.withD(r0, r1, d, s):
		// S in fp32; each group of rows is evaluated as soon as its S is
		// in s.
		reference.MulTensorRows(g.a, g.b, r0, r1, d)
		g.mag.rows(r0, r1, s, func(lo, hi int) {
			g.ev.rows(e, r0, lo, hi, d, s, g.dense, g.c, g.sa, g.sb, g.k, n)
		})
		return
	}
	parallel.For(r1-r0, grain, func(lo, hi int) {
		g.ev.rows(e, r0, r0+lo, r0+hi, d, s, g.dense, g.c, g.sa, g.sb, g.k, n)
	})
}

// gemmDense holds gemm's a and b as float64 values for the partial-sum
// overflow test (dotPosNeg), made on first use by load: most cases never
// need them, and a 1024³ case would hold 16 MiB of them.
type gemmDense struct {
	load   func() (a, b []float64) // nil where af and bf are given
	once   sync.Once
	af, bf []float64
}

// denseTensors is the gemmDense of tensors a and b, converted on first
// use.
func denseTensors(a, b *tensor.Tensor) *gemmDense {
	return &gemmDense{load: func() ([]float64, []float64) { return a.Float64s(), b.Float64s() }}
}

// values returns a and b as float64 values.
func (g *gemmDense) values() (a, b []float64) {
	g.once.Do(func() {
		if g.load != nil {
			g.af, g.bf = g.load()
		}
	})
	return g.af, g.bf
}

// rows sets the expected outcome of output rows [lo, hi) in e, d and s,
// which hold rows from base on (element (i, j) at (i−base)·n + j).
func (ev *gemmEval) rows(e *bound.Expected, base, lo, hi int, d, s []float64, dense *gemmDense, c, sa, sb []float64, k, n int) {
	el := gemmOperands{sa: 1, sb: 1, dense: dense, k: k, n: n}
	for i := lo; i < hi; i++ {
		row := (i - base) * n
		for j := 0; j < n; j++ {
			idx := row + j
			if ev.plain {
				// The fast path (fastElement) over the rest of the row, up
				// to the first element that needs the interval path.
				end := row + n
				j += ev.out.StoreDots(&ev.dot, d[idx:end], s[idx:end], ev.magUp, e.Ref[idx:end], e.Bound[idx:end], e.Alt[idx:end])
				if j == n {
					break
				}
				idx = row + j
			}
			// The interval path. s[idx] is a sum of k exact products in
			// float64, or in fp32 (gemm_mag.go): round it up (magUp).
			el.d, el.s, el.i, el.j = d[idx], s[idx]*ev.magUp, i, j
			if c != nil {
				el.c = c[i*n+j]
			}
			if sa != nil {
				el.sa, el.sb = gemmScaleAt(sa, i), gemmScaleAt(sb, j)
			}
			e.Ref[idx], e.Bound[idx], e.Alt[idx] = ev.element(&el)
		}
	}
}

// gemmScaleAt returns scale s for row or column i ([1] broadcasts).
func gemmScaleAt(s []float64, i int) float64 {
	if len(s) == 1 {
		return s[0]
	}
	return s[i]
}

// dotPosNeg returns upper bounds on the sum of the positive products and
// on the sum of the magnitudes of the negative products of row i of a and
// column j of b, skipping non-finite products: their float64 sums rounded
// up by bound.MagUp (the products are exact in float64, gemm_bound.go).
func dotPosNeg(a, b []float64, i, j, k, n int) (pos, neg float64) {
	for kk := 0; kk < k; kk++ {
		p := float64(a[i*k+kk] * b[kk*n+j])
		switch {
		case p > 0 && !math.IsInf(p, 0):
			pos += p
		case p < 0 && !math.IsInf(p, 0):
			neg -= p
		}
	}
	return bound.MagUp(pos, k), bound.MagUp(neg, k)
}
