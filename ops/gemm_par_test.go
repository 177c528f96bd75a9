package ops

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// TestGEMMExpectMatchesSerial holds gemm's Expect, split by rows over
// cores, to one serial pass over all rows, bit for bit, in every mode and
// dist (special values take the reference's exact loop), with alpha and
// beta, on a shape large enough to be split and on empty ones; fp16
// operands' d and S through the one pass (dgemm.MulAbsH32, where the CPU
// has it) and through Mul and the fp32 S, that with |b| packed whole and
// in blocks of 16 rows of K (gemmMag32K), by rows and, with fewer rows
// than gemmMag32Rows, by strips of columns (7×40×1100: two whole strips
// and a short one ending in a short panel).
func TestGEMMExpectMatchesSerial(t *testing.T) {
	defer func(w, k int, h bool) {
		gemmMag32WholeElems, gemmMag32K, gemmMagWithD = w, k, h
	}(gemmMag32WholeElems, gemmMag32K, gemmMagWithD)
	for _, dims := range [][3]int{{130, 40, 70}, {7, 40, 1100}, {3, 0, 5}, {3, 5, 0}, {0, 5, 3}} {
		expectMatchesSerial(t, dims[0], dims[1], dims[2])
	}
}

// expectMatchesSerial is TestGEMMExpectMatchesSerial on an m×k×n case.
func expectMatchesSerial(t *testing.T, m, k, n int) {
	const seed = 17
	eachGEMMCase(t, m, k, n, seed, func(mode GEMMMode, dist string, p Params, in map[string]*tensor.Tensor) {
		num := tensor.Numerics{}
		cfg := gemmConfig(p)
		a, b, c := in["a"].Float64s(), in["b"].Float64s(), in["c"].Float64s()
		var sa, sb []float64
		if mode.Int8() {
			sa, sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
		}
		d, s := reference.MatMul(m, k, n, a, b)
		ev, err := newGEMMEval(cfg, k, num)
		if err != nil {
			t.Fatal(err)
		}
		if gemmMagFP32(mode.In, k) {
			s, ev.magUp = serialMagFP32(m, k, n, a, b), gemmMagUpFactor32(k)
		}
		want := bound.NewExpected(m * n)
		ev.rows(want, 0, 0, m, d, s, &gemmDense{af: a, bf: b}, c, sa, sb, k, n)
		for _, path := range []struct {
			name             string
			withD            bool
			wholeElems, magK int
		}{{"one pass", true, 1 << 20, 256}, {"|b| whole", false, 1 << 20, 256}, {"|b| in blocks of 16 rows", false, 0, 16}} {
			gemmMag32WholeElems, gemmMag32K, gemmMagWithD = path.wholeElems, path.magK, path.withD
			got, err := GEMM.Expect(p, in, num)
			if err != nil {
				t.Fatal(err)
			}
			if i := firstExpectedDiff(got["out"], want); i >= 0 {
				t.Fatalf("gemm mode=%s dist=%s %dx%dx%d seed=%d, d and S by %s: element %d: got %s / want %s", mode.Name, dist, m, k, n, seed, path.name, i, expectedAt(got["out"], i), expectedAt(want, i))
			}
		}
	})
}

// TestGEMMExpectBlocksMatchesExpect holds ExpectBlocks, its blocks
// concatenated, to Expect bit for bit in every mode and dist, with alpha
// and beta, on blocks of one row, of several rows with a shorter last
// one, and of the whole output, with |b| packed whole for every block
// and in blocks of its rows.
func TestGEMMExpectBlocksMatchesExpect(t *testing.T) {
	const m, k, n, seed = 37, 40, 70, 19
	defer func(v int, f bool, w, kb int) {
		gemmBlockElems, gemmBlockFit, gemmMag32WholeElems, gemmMag32K = v, f, w, kb
	}(gemmBlockElems, gemmBlockFit, gemmMag32WholeElems, gemmMag32K)
	gemmBlockFit = false
	eachGEMMCase(t, m, k, n, seed, func(mode GEMMMode, dist string, p Params, in map[string]*tensor.Tensor) {
		gemmMag32WholeElems, gemmMag32K = 1<<20, 256
		full, err := GEMM.Expect(p, in, tensor.Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range [][3]int{{1, 1 << 20, 256}, {5, 1 << 20, 256}, {m, 1 << 20, 256}, {5, 0, 16}} {
			// rows per block, and |b| whole or in blocks of 16 rows
			rows, kb := cfg[0], 0
			if cfg[1] == 0 {
				kb = cfg[2]
			}
			gemmBlockElems, gemmMag32WholeElems, gemmMag32K = rows*n, cfg[1], cfg[2]
			got := bound.NewExpected(0)
			var blocks []int
			err := GEMM.(BlockExpecter).ExpectBlocks(p, in, tensor.Numerics{}, func(name string, e *bound.Expected) error {
				if name != "out" {
					t.Fatalf("gemm mode=%s dist=%s seed=%d: block of output %q, want \"out\"", mode.Name, dist, seed, name)
				}
				got.Ref, got.Bound, got.Alt = append(got.Ref, e.Ref...), append(got.Bound, e.Bound...), append(got.Alt, e.Alt...)
				blocks = append(blocks, e.Span())
				return nil
			})
			if err != nil {
				t.Fatalf("gemm mode=%s dist=%s seed=%d: ExpectBlocks: %v", mode.Name, dist, seed, err)
			}
			if got.Span() != m*n || len(blocks) != (m+rows-1)/rows {
				t.Fatalf("gemm mode=%s dist=%s %dx%dx%d rows=%d seed=%d: blocks %v, want %d of %d rows covering %d elements", mode.Name, dist, m, k, n, rows, seed, blocks, (m+rows-1)/rows, rows, m*n)
			}
			if i := firstExpectedDiff(got, full["out"]); i >= 0 {
				t.Fatalf("gemm mode=%s dist=%s %dx%dx%d rows=%d |b| blocks=%d (0: whole) seed=%d: element %d: got %s / want (Expect, |b| whole) %s", mode.Name, dist, m, k, n, rows, kb, seed, i, expectedAt(got, i), expectedAt(full["out"], i))
			}
		}
	})
}

// eachGEMMCase calls fn with the validated params (alpha 0.75, beta
// −1.5) and the seeded inputs of an m×k×n gemm case in every mode and
// dist.
func eachGEMMCase(t *testing.T, m, k, n int, seed uint64, fn func(mode GEMMMode, dist string, p Params, in map[string]*tensor.Tensor)) {
	t.Helper()
	for _, mode := range GEMMModes() {
		for _, dist := range GEMM.Dists() {
			p, err := GEMM.Validate(Params{"mode": mode.Name, "alpha": "0.75", "beta": "-1.5"})
			if err != nil {
				t.Fatal(err)
			}
			in, err := GEMM.Generate(p, Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: dist, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			fn(mode, dist, p, in)
		}
	}
}

// TestGEMMRowsAllocFree checks that the per-element bound loop allocates
// nothing per element, on the fast path and on the interval path, with
// alpha and beta and in int8 mode, and with elements that take the
// partial-sum overflow test (once the dense float64 inputs exist).
func TestGEMMRowsAllocFree(t *testing.T) {
	const m, k, n, seed = 8, 40, 16, 23
	for _, params := range []Params{
		{"mode": "fp16_fp32acc"},
		{"mode": "fp16", "alpha": "0.75", "beta": "-1.5"},
		{"mode": "int8_int32acc", "alpha": "2"},
	} {
		for _, dist := range []string{DistNormal, DistLarge, DistSpecial} {
			p, err := GEMM.Validate(params)
			if err != nil {
				t.Fatal(err)
			}
			in, err := GEMM.Generate(p, Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: dist, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			cfg := gemmConfig(p)
			var c, sa, sb []float64
			if cfg.Beta != 0 {
				c = in["c"].Float64s()
			}
			if cfg.Mode.Int8() {
				sa, sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
			}
			for _, interval := range []bool{false, true} {
				ev, err := newGEMMEval(cfg, k, tensor.Numerics{})
				if err != nil {
					t.Fatal(err)
				}
				ev.plain = ev.plain && !interval
				d, s := make([]float64, m*n), make([]float64, m*n)
				reference.MatMulTensors(in["a"], in["b"], d, s)
				dense := denseTensors(in["a"], in["b"])
				dense.values() // made once per case, not per element
				e := bound.NewExpected(m * n)
				if allocs := testing.AllocsPerRun(5, func() { ev.rows(e, 0, 0, m, d, s, dense, c, sa, sb, k, n) }); allocs != 0 {
					t.Errorf("gemm params %v dist=%s interval=%v %dx%dx%d seed=%d: rows: got %v allocs per run / want 0",
						p, dist, interval, m, k, n, seed, allocs)
				}
			}
		}
	}
}

// serialMagFP32 is S = Σ|a||b| summed in fp32 by the plain loop, k
// ascending (the products of fp16 or int8 values are exact in fp32).
func serialMagFP32(m, k, n int, a, b []float64) []float64 {
	s := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var acc float32
			for kk := range k {
				acc += float32(math.Abs(a[i*k+kk]) * math.Abs(b[kk*n+j]))
			}
			s[i*n+j] = float64(acc)
		}
	}
	return s
}

// TestGEMMBlockRows: a block of ExpectBlocks has as many rows as have
// their Expected fit in a third of the case's tensor bytes, or
// gemmBlockElems elements' worth if that is more (a row at least, all of
// them at most; the tensor bytes grow a block to gemmBlockMaxRows rows at
// most), shared evenly among the fewest blocks: the Expected never
// outgrows the larger of the two, and a row fewer a block would take
// another block.
func TestGEMMBlockRows(t *testing.T) {
	const f16 = 2
	for _, tt := range []struct {
		m, k, n, want int
	}{
		{1024, 1024, 1024, 128},   // 2^17 elements: 2 MiB / (17 · 1024) = 120 rows fit
		{2048, 2048, 2048, 228},   // 8 MiB / (17 · 2048) = 240 rows fit: 9 blocks
		{4096, 4096, 4096, 456},   // 32 MiB / (17 · 4096) = 481: 9 blocks
		{4096, 4096, 11008, 373},  // 68 MiB / (17 · 11008) = 381: 11 blocks
		{8192, 8192, 4096, 1024},  // 85 MiB / (17 · 4096) = 1285 rows fit, held to 1024: 8 blocks
		{3000, 16384, 4096, 1000}, // 1230 rows fit, held to 1024: 3 blocks of 1000
		{16, 4096, 11008, 16},     // all rows fit
		{512, 16, 65536, 20},      // (16 KiB + 2 MiB + 64 MiB) / 3 / (17 · 65536) = 20: 26 blocks
		{256, 1, 1 << 20, 10},     // 2^28 outputs: 10 rows fit, 26 blocks
		{2, 1, 1 << 20, 1},        // 2^17 / 2^20 rounds to 0, and 17 bytes a row exceed 2 MiB: one row
		{3, 5, 7, 3},              // all of a small output
		{1 << 20, 1, 1, 1 << 17},  // 2^17 elements of one column (the tensors' third fits 1024 rows at most)
		{5, 5, 0, 5},              // an empty output: rows of nothing
	} {
		bytes := (tt.m*tt.k + tt.k*tt.n + tt.m*tt.n) * f16
		got := gemmBlockRows(tt.m, tt.n, bytes)
		if got != tt.want {
			t.Errorf("gemm m=%d k=%d n=%d (%d tensor bytes): gemmBlockRows = %d, want %d", tt.m, tt.k, tt.n, bytes, got, tt.want)
		}
		if n := max(tt.n, 1); got*n*gemmExpectedBytes > max(bytes/3, gemmBlockElems*gemmExpectedBytes, n*gemmExpectedBytes) {
			t.Errorf("gemm m=%d k=%d n=%d: %d rows hold %d bytes of Expected, over both a third of the case's %d tensor bytes and 2^17 elements' worth", tt.m, tt.k, tt.n, got, got*n*gemmExpectedBytes, bytes)
		}
		if blocks := (tt.m + got - 1) / got; got > 1 && (tt.m+got-2)/(got-1) == blocks {
			t.Errorf("gemm m=%d k=%d n=%d: blocks of %d rows, want %d: %d blocks of one row fewer cover the output too", tt.m, tt.k, tt.n, got, got-1, blocks)
		}
	}
}
