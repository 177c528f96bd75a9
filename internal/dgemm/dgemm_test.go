package dgemm

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/npuverify/npuverify/tensor"
)

// loop is the plain loop MulAbs must equal: every element starts at +0
// and adds its products k ascending, each product rounded on its own
// (the conversion forbids fusing it into the addition).
func loop(m, k, n int, a, b []float64) (d, s []float64) {
	d, s = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var dv, sv float64
			for kk := range k {
				x, y := a[i*k+kk], b[kk*n+j]
				dv += float64(x * y)
				sv += float64(math.Abs(x) * math.Abs(y))
			}
			d[i*n+j], s[i*n+j] = dv, sv
		}
	}
	return d, s
}

// same reports whether x and y are the same float64 bit for bit, or both
// NaN (whose sign and payload are unspecified).
func same(x, y float64) bool {
	return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
}

// The value distributions of the tests: every one is a set of values whose
// products are exact in float64 (MulAbs's precondition).
const (
	distFP16    = iota // fp16 values of moderate range
	distFP32           // fp32 values over a wide exponent range
	distZeros          // normal values with many ±0
	distSubnorm        // fp32 and fp16 subnormals among normal values
	distSpecial        // normal values with ±Inf, NaN and ±0
	distCancel         // b's rows repeat negated, so sums cancel
	numDists
)

func gen(r *rand.Rand, dist, cnt int) []float64 {
	x := make([]float64, cnt)
	for i := range x {
		v := r.NormFloat64()
		switch dist {
		case distFP16:
			x[i] = math.Ldexp(math.Round(math.Ldexp(v, 10)), -10)
		case distFP32:
			x[i] = float64(float32(math.Ldexp(v, r.IntN(120)-60)))
		case distZeros:
			x[i] = float64(float32(v))
			if i%3 == 0 {
				x[i] = math.Copysign(0, v)
			}
		case distSubnorm:
			switch i % 4 {
			case 0:
				x[i] = math.Ldexp(float64(r.IntN(1<<10)-1<<9), -24) // fp16 subnormal
			case 1:
				x[i] = math.Ldexp(float64(r.IntN(1<<20)-1<<19), -149) // fp32 subnormal
			default:
				x[i] = float64(float32(v))
			}
		case distSpecial:
			switch r.IntN(16) {
			case 0:
				x[i] = math.Inf(1)
			case 1:
				x[i] = math.Inf(-1)
			case 2:
				x[i] = math.NaN()
			case 3:
				x[i] = math.Copysign(0, v)
			default:
				x[i] = float64(float32(v))
			}
		case distCancel:
			x[i] = float64(float32(v))
		}
	}
	return x
}

// operands returns a [m,k] and b [k,n] of one distribution.
func operands(r *rand.Rand, dist, m, k, n int) (a, b []float64) {
	a, b = gen(r, dist, m*k), gen(r, dist, k*n)
	if dist == distCancel {
		for kk := k / 2; kk < 2*(k/2); kk++ {
			for j := range n {
				b[kk*n+j] = -b[(kk-k/2)*n+j]
			}
			for i := range m {
				a[i*k+kk] = a[i*k+kk-k/2]
			}
		}
	}
	return a, b
}

// shapes cross every blocking edge: mr, nr, kc, mc, nc and their partial
// tiles, plus empty and single-element products, and products of one row
// block over several column blocks (product.columns).
var shapes = [][3]int{
	{0, 3, 4}, {3, 0, 4}, {3, 4, 0}, {1, 1, 1}, {2, 3, 5}, {3, 1, 8}, {4, 7, 9},
	{mr, kc, nr}, {mr + 1, kc + 1, nr + 1}, {17, 2*kc + 3, 23},
	{mc - 1, 5, 2*nr - 1}, {mc + 2, kc - 1, 3 * nr}, {2*mc + 5, 33, 17},
	{5, 9, nc + 13}, {7, kc + 2, nc - 1}, {mrMul + 1, 2*kc + 1, 2*nc + 5}, {mc + 1, kc + 3, nc + 9},
	{mrMul, kc, nr}, {mrMul + 1, 3, nr - 1}, {2*mrMul - 1, kc + 1, 2 * nr},
	{mrMul8, kc, nr}, {mrMul8 + 1, 3, nr - 1}, {2*mrMul8 - 1, kc + 1, 2 * nr}, {2 * mrMul8, 33, nc + 3},
}

// withKernels runs f with MulAbs's micro-kernel set to k (unless nil)
// and Mul's to km, restoring them after.
func withKernels(k kernelFunc, km mulTile, f func()) {
	saved, savedMul := kernel, mul
	if k != nil {
		kernel = k
	}
	mul = km
	defer func() { kernel, mul = saved, savedMul }()
	f()
}

// A kernelSet is one MulAbs micro-kernel (nil: Mul's alone) and one Mul
// micro-kernel, for the tests.
type kernelSet struct {
	name string
	k    kernelFunc
	km   mulTile
}

// kernelSets are the micro-kernels TestMulAbsMatchesLoop holds to the
// loop, each once: MulAbs's on this machine with Mul's, their portable
// twins together, then every other Mul tile this machine runs and the
// portable twin of every tile size.
func kernelSets() []kernelSet {
	sets := []kernelSet{
		{kernelName + "/mul-" + mul.name, kernel, mul},
		{fmt.Sprintf("go/mul-go-%d-rows", mul.mr), kernelGo, goTile(mul.mr)},
	}
	twins := map[int]bool{mul.mr: true}
	for _, t := range mulTiles() {
		if t.name != mul.name && t.name != "go" {
			sets = append(sets, kernelSet{"mul-" + t.name, nil, t})
		}
		if !twins[t.mr] {
			twins[t.mr] = true
			sets = append(sets, kernelSet{fmt.Sprintf("mul-go-%d-rows", t.mr), nil, goTile(t.mr)})
		}
	}
	return sets
}

// TestMulAbsMatchesLoop checks MulAbs, with this machine's kernel and with
// the portable one, against the plain loop bit for bit (d and s) on
// shapes crossing every blocking edge and every value distribution,
// including ±0, subnormals, ±Inf and NaN.
//
// Mul is held to the same loop's d the same way.
func TestMulAbsMatchesLoop(t *testing.T) {
	// Two Ps at least, so that the products of one row block take
	// product.columns on any machine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	sets := kernelSets()
	for si, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		for dist := range numDists {
			seed := uint64(1000*si + dist)
			r := rand.New(rand.NewPCG(seed, 0))
			a, b := operands(r, dist, m, k, n)
			wd, ws := loop(m, k, n, a, b)
			for _, kr := range sets {
				// d and s start dirty: MulAbs must overwrite them.
				d, s := gen(r, distSpecial, m*n), gen(r, distSpecial, m*n)
				dm := gen(r, distSpecial, m*n)
				withKernels(kr.k, kr.km, func() {
					if kr.k != nil {
						MulAbs(m, k, n, Slice(a), Slice(b), d, s)
					}
					Mul(m, k, n, Slice(a), Slice(b), dm)
				})
				for i := range wd {
					if kr.k != nil && (!same(d[i], wd[i]) || !same(s[i], ws[i])) {
						t.Fatalf("dgemm MulAbs kernel=%s m=%d k=%d n=%d dist=%d seed=%d: element %d: got d=%v (%#x) s=%v / want loop d=%v (%#x) s=%v",
							kr.name, m, k, n, dist, seed, i, d[i], math.Float64bits(d[i]), s[i], wd[i], math.Float64bits(wd[i]), ws[i])
					}
					if !same(dm[i], wd[i]) {
						t.Fatalf("dgemm Mul kernel=%s m=%d k=%d n=%d dist=%d seed=%d: element %d: got d=%v (%#x) / want loop d=%v (%#x)",
							kr.name, m, k, n, dist, seed, i, dm[i], math.Float64bits(dm[i]), wd[i], math.Float64bits(wd[i]))
					}
				}
			}
		}
	}
}

// TestMulHalvesMatchesLoop holds Mul of an fp16 tensor B, packed as fp16
// (variant.h), to the plain loop on B's values bit for bit, with each
// fp16-panel tile this machine runs and the portable twin of both tile
// sizes, on the shapes that cross every blocking edge (those shared by
// columns, product.columns, included: their strips are fp16 panels too)
// and B drawn from every fp16 bit pattern (NaN, ±Inf, ±0 and subnormals
// among them), against A from every distribution.
func TestMulHalvesMatchesLoop(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	tiles := append(mulHTiles(), goTileH(mrMul), goTileH(mrMul8))
	saved := mulH
	defer func() { mulH = saved }()
	for si, sh := range shapes {
		m, k, n := sh[0], sh[1], sh[2]
		for dist := range numDists {
			seed := uint64(1000*si + dist)
			r := rand.New(rand.NewPCG(seed, 1))
			a := gen(r, dist, m*k)
			bt := tensor.MustNew(tensor.Float16, k*n)
			for i := range k * n {
				bt.SetBits(i, uint64(r.Uint32()&0xFFFF))
			}
			b := make([]float64, k*n)
			bt.Float64sFrom(0, b)
			wd, _ := loop(m, k, n, a, b)
			for _, tile := range tiles {
				mulH = tile
				d := gen(r, distSpecial, m*n) // dirty: Mul must overwrite it
				Mul(m, k, n, Slice(a), bt, d)
				for i := range wd {
					if !same(d[i], wd[i]) {
						t.Fatalf("dgemm Mul fp16 panels tile=%s m=%d k=%d n=%d dist=%d seed=%d: element %d: got %v (%#x), want loop %v (%#x)",
							tile.name, m, k, n, dist, seed, i, d[i], math.Float64bits(d[i]), wd[i], math.Float64bits(wd[i]))
					}
				}
			}
		}
	}
}

// TestMulAbsRoundingBound checks the error claim the gemm bounds build on,
// against the exact dot products (math/big): for finite inputs
// |d − Σa·b| ≤ γ_K(2^-53)·S with S = Σ|a|·|b| exact (every product is
// exact in float64 and reaches d through at most K−1 roundings of
// the additions, each a factor 1+δ, |δ| ≤ 2^-53; Higham §3.1), and
// |s − S| ≤ γ_{K−1}(2^-53)·S likewise. It would fail if a kernel dropped,
// repeated or double-rounded a product.
func TestMulAbsRoundingBound(t *testing.T) {
	const prec = 2048 // exact: every term is a float64, and K is small
	for si, sh := range [][3]int{{4, 1, 5}, {7, 2, 9}, {mr + 1, kc + 7, nr + 3}, {5, 3*kc + 1, 11}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, dist := range []int{distFP16, distFP32, distZeros, distSubnorm, distCancel} {
			seed := uint64(7000 + 10*si + dist)
			r := rand.New(rand.NewPCG(seed, 0))
			a, b := operands(r, dist, m, k, n)
			d, s := make([]float64, m*n), make([]float64, m*n)
			MulAbs(m, k, n, Slice(a), Slice(b), d, s)
			gamma := func(n int) *big.Float { // n·u/(1−n·u), u = 2^-53
				nu := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(float64(n)), -53)
				den := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1), nu)
				return new(big.Float).SetPrec(prec).Quo(nu, den)
			}
			gK, gK1 := gamma(k), gamma(k-1)
			for i := range m {
				for j := range n {
					dot, mag := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
					for kk := range k {
						x, y := a[i*k+kk], b[kk*n+j]
						p := new(big.Float).SetPrec(prec).Mul(big.NewFloat(x), big.NewFloat(y))
						dot.Add(dot, p)
						mag.Add(mag, p.Abs(p))
					}
					check := func(what string, got float64, want, tol *big.Float) {
						diff := new(big.Float).SetPrec(prec).Sub(big.NewFloat(got), want)
						lim := new(big.Float).SetPrec(prec).Mul(tol, mag)
						if diff.Abs(diff).Cmp(lim) > 0 {
							t.Fatalf("dgemm MulAbs m=%d k=%d n=%d dist=%d seed=%d: element [%d,%d]: %s: got %v / want %v, bound %v",
								m, k, n, dist, seed, i, j, what, got, want.Text('g', 20), lim.Text('g', 5))
						}
					}
					check("d", d[i*n+j], dot, gK)
					check("s", s[i*n+j], mag, gK1)
				}
			}
		}
	}
}

// TestKernelGoSpecials pins the portable kernel's IEEE cases the loop
// relies on: Inf·0 = NaN, Inf − Inf = NaN, −0 products sum to +0.
func TestKernelGoSpecials(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		a, b []float64
		d, s float64
	}{
		{[]float64{inf, 1}, []float64{0, 1}, math.NaN(), math.NaN()},
		{[]float64{inf, 1}, []float64{1, -inf}, math.NaN(), inf},
		{[]float64{-1, 0}, []float64{0, 5}, 0, 0},
	} {
		d, s := make([]float64, 1), make([]float64, 1)
		withKernels(kernelGo, mul, func() { MulAbs(1, 2, 1, Slice(c.a), Slice(c.b), d, s) })
		if !same(d[0], c.d) || !same(s[0], c.s) {
			t.Errorf("dgemm MulAbs a=%v b=%v: got d=%v s=%v / want d=%v s=%v", c.a, c.b, d[0], s[0], c.d, c.s)
		}
		if math.Signbit(d[0]) != math.Signbit(c.d) && !math.IsNaN(c.d) {
			t.Errorf("dgemm MulAbs a=%v b=%v: got d=%v / want %v (sign)", c.a, c.b, d[0], c.d)
		}
	}
}

// BenchmarkMulAbs is d = A·B and s = |A|·|B| at 1024³ on fp16-like
// values, with this machine's kernel and the portable one; GFLOP/s counts
// both products (4·n³ flops).
func BenchmarkMulAbs(b *testing.B) {
	for _, n := range []int{256, 1024} {
		r := rand.New(rand.NewPCG(1, 0))
		x, y := gen(r, distFP16, n*n), gen(r, distFP16, n*n)
		d, s := make([]float64, n*n), make([]float64, n*n)
		b.Run(fmt.Sprintf("anchor-gonum-dgemm/%d", n), func(b *testing.B) {
			// The anchor: gonum's Dgemm for d alone (2·n³ flops), measured
			// in the same run, so that ratios survive a noisy machine.
			for b.Loop() {
				blas64.Implementation().Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 0, d, n)
			}
			b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		for _, kr := range []kernelSet{{kernelName, kernel, mul}, {"go", kernelGo, mul}} {
			if kr.name == "go" && kernelName != "go" && n > 256 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%d", kr.name, n), func(b *testing.B) {
				cpu0 := cpuTime()
				withKernels(kr.k, kr.km, func() {
					for b.Loop() {
						MulAbs(n, n, n, Slice(x), Slice(y), d, s)
					}
				})
				// CPU time per op: on a shared machine it is steadier than
				// wall time, and it shows the cost of idle waits.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(4*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMul is d = A·B alone at 1024³ on fp16-like values (2·n³ flops),
// beside gonum's Dgemm in the same run, and at a decoding step's shape.
func BenchmarkMul(b *testing.B) {
	const n = 1024
	r := rand.New(rand.NewPCG(1, 0))
	x, y := gen(r, distFP16, n*n), gen(r, distFP16, n*n)
	d := make([]float64, n*n)
	b.Run("anchor-gonum-dgemm", func(b *testing.B) {
		for b.Loop() {
			blas64.Implementation().Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 0, d, n)
		}
		b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run(mul.name, func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			Mul(n, n, n, Slice(x), Slice(y), d)
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	// The cube with B an fp16 tensor, as gemm's reference gets it (a block
	// of rows of A at a time, ops.ExpectBlocks: 128 at 1024³) on a CPU
	// without MulAbsH32's tile; with it, BenchmarkMulAbsH32 times the
	// pass that replaces Mul there.
	for _, m := range []int{128, 256} {
		b.Run(fmt.Sprintf("fp16-%dx1024x1024", m), func(b *testing.B) {
			bt := tensor.MustNew(tensor.Float16, n*n)
			for i, v := range y {
				bt.SetFloat64(i, v, tensor.Numerics{})
			}
			cpu0 := cpuTime()
			for b.Loop() {
				Mul(m, n, n, Slice(x[:m*n]), bt, d[:m*n])
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(2*float64(m*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	// A decoding step's shape, B an fp16 tensor as the reference gets it:
	// few rows against a wide B, each B value used 16 times, so packing B
	// costs about as much as multiplying.
	b.Run("decode-fp16-16x4096x11008", func(b *testing.B) {
		const m, k, n = 16, 4096, 11008
		x := gen(r, distFP16, m*k)
		bt := tensor.MustNew(tensor.Float16, k*n)
		for i, v := range gen(r, distFP16, k*n) {
			bt.SetFloat64(i, v, tensor.Numerics{})
		}
		d := make([]float64, m*n)
		cpu0 := cpuTime()
		for b.Loop() {
			Mul(m, k, n, Slice(x), bt, d)
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkPack is the packing of MulAbs at 1024³ alone: B once (every
// K-block, all columns) and A once (every K-block and row block), from
// float64 values; and Mul's packing of B from fp16 values (B-fp16).
func BenchmarkPack(b *testing.B) {
	const n = 1024
	x := make(Slice, n*n)
	for i := range x {
		x[i] = float64(i%77) - 38
	}
	b.Run("B", func(b *testing.B) {
		pb := make([]float64, 2*kc*n)
		for b.Loop() {
			for pc := 0; pc < n; pc += kc {
				packB(x, n, pc, kc, 0, n, variant{abs: true}, pb)
			}
		}
	})
	// B as fp16 values in a tensor, which packBDirect converts straight
	// into the packed block (where the CPU has F16C), as a GEMM's
	// reference reads it.
	bt := tensor.MustNew(tensor.Float16, n*n)
	for i := range n * n {
		bt.SetFloat64(i, x[i], tensor.Numerics{})
	}
	b.Run("B-fp16", func(b *testing.B) {
		pb := make([]float64, kc*n)
		for b.Loop() {
			for pc := 0; pc < n; pc += kc {
				packB(bt, n, pc, kc, 0, n, variant{}, pb)
			}
		}
	})
	b.Run("A", func(b *testing.B) {
		pa := make([]float64, mc*kc)
		for b.Loop() {
			for pc := 0; pc < n; pc += kc {
				for ic := 0; ic < n; ic += mc {
					packA(x, n, ic, min(mc, n-ic), pc, kc, mr, pa)
				}
			}
		}
	})
}

// BenchmarkMacro is one packed block of the micro-kernel alone (mc×kc of
// A against kc×nc of B, no packing): run with -cpu 1 and compare its
// GFLOP/s (4·mc·kc·nc flops, d and s) with the core's FMA peak to see
// what is left to gain in the kernel.
func BenchmarkMacro(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 0))
	pa, pb := gen(r, distFP16, mc*kc), gen(r, distFP16, 2*kc*nc)
	d, s := make([]float64, mc*nc), make([]float64, mc*nc)
	b.Run(kernelName, func(b *testing.B) {
		for b.Loop() {
			macro(variant{mr: mr, abs: true, kern: kernel}, mc, kc, nc, pa, pb, d, s, nc, true)
		}
		b.ReportMetric(4*float64(mc*kc*nc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	// Mul's kernels on the same block (2·mc·kc·nc flops, d alone).
	for _, t := range mulTiles() {
		b.Run("mul-"+t.name, func(b *testing.B) {
			for b.Loop() {
				macro(variant{mr: t.mr, kern: t.kern}, mc, kc, nc, pa, pb, d, nil, nc, true)
			}
			b.ReportMetric(2*float64(mc*kc*nc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestPackedBLen holds the packed B buffer's length to what packB writes:
// on a NaN-filled buffer of exactly packedBLen, packB must stay inside it
// (a short one panics) and leave no NaN (a long one, as the buffer once
// was, nr times too long, keeps its tail).
func TestPackedBLen(t *testing.T) {
	for _, abs := range []bool{false, true} {
		v := variant{abs: abs}
		for _, sh := range [][2]int{{1, 1}, {3, 7}, {8, 8}, {256, 1024}, {17, 9}} {
			kcc, ncc := sh[0], sh[1]
			ncb := roundUp(ncc, nr)
			b := make(Slice, kcc*ncc)
			for i := range b {
				b[i] = float64(i + 1)
			}
			pb := make([]float64, packedBLen(v, kcc, ncb))
			for i := range pb {
				pb[i] = math.NaN()
			}
			packB(b, ncc, 0, kcc, 0, ncc, variant{abs: abs}, pb)
			for i, x := range pb {
				if math.IsNaN(x) {
					t.Fatalf("packB(k=%d, n=%d, abs=%v): element %d of the %d-long buffer not written, want every one", kcc, ncc, abs, i, len(pb))
				}
			}
		}
	}
}

// TestPackBDirect holds packB from an fp16 tensor, which fills whole
// micro-panels straight from it where the CPU has F16C (packBDirect), to
// packB from the same values as a Slice (through the row buffer), on
// blocks of B at offsets in k and n, with and without a last partial
// micro-panel, every fp16 pattern among the values: the same packed
// values but in the last micro-panel's padding, and every element of
// the packed block written. TestTensorMulMatchesSlice holds the products.
func TestPackBDirect(t *testing.T) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 0))
	for _, sh := range [][4]int{{1, 8, 0, 0}, {3, 7, 0, 0}, {8, 8, 1, 8}, {17, 9, 2, 3}, {256, 1024, 0, 0}, {5, 20, 4, 5}, {9, 33, 3, 0}} {
		kcc, ncc, pc, jc := sh[0], sh[1], sh[2], sh[3]
		k, n := pc+kcc+2, jc+ncc+5
		bt := tensor.MustNew(tensor.Float16, k*n)
		for i := range k * n {
			bt.SetBits(i, uint64(r.Uint32()&0xFFFF))
		}
		bs := make(Slice, k*n)
		bt.Float64sFrom(0, bs)
		ncb := roundUp(ncc, nr)
		direct, buffered := make([]float64, packedBLen(variant{}, kcc, ncb)), make([]float64, packedBLen(variant{}, kcc, ncb))
		for i := range direct {
			direct[i] = math.Float64frombits(0x7FF8_DEAD_BEEF_0001)
		}
		packB(bt, n, pc, kcc, jc, ncc, variant{}, direct)
		packB(bs, n, pc, kcc, jc, ncc, variant{}, buffered)
		for i, x := range direct {
			q, c := i/(nr*kcc), i%nr // micro-panel, column within it
			if math.Float64bits(x) == 0x7FF8_DEAD_BEEF_0001 {
				t.Fatalf("dgemm packB fp16 k=%d n=%d pc=%d kcc=%d jc=%d ncc=%d seed=%d: element %d not written, want every one", k, n, pc, kcc, jc, ncc, seed, i)
			}
			if q*nr+c < ncc && math.Float64bits(x) != math.Float64bits(buffered[i]) {
				t.Fatalf("dgemm packB fp16 k=%d n=%d pc=%d kcc=%d jc=%d ncc=%d seed=%d: element %d = %#x, want (from a Slice) %#x", k, n, pc, kcc, jc, ncc, seed, i, math.Float64bits(x), math.Float64bits(buffered[i]))
			}
		}
	}
}

// TestTensorMulMatchesSlice holds Mul with an fp16 tensor for B (packed
// straight from it, packBDirect), and MulAbs (whose packing of b and |b|
// together does not take that path), to the same with B's values as a Slice,
// bit for bit, on shapes crossing the blocking edges (and n not a
// multiple of nr), the values every fp16 pattern but NaN and Inf (d is
// then compared by its bits, with no NaN whose payload is unspecified).
func TestTensorMulMatchesSlice(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	const seed = 9
	r := rand.New(rand.NewPCG(seed, 0))
	for _, sh := range [][3]int{{16, 300, 1100}, {7, 513, 31}, {1, 8, 9}, {13, 257, 1024 + 8 + 3}} {
		m, k, n := sh[0], sh[1], sh[2]
		a := gen(r, distFP16, m*k)
		bt := tensor.MustNew(tensor.Float16, k*n)
		for i := range k * n {
			v := uint64(r.Uint32() & 0xFFFF)
			if v&0x7C00 == 0x7C00 {
				v &^= 0x4000 // finite
			}
			bt.SetBits(i, v)
		}
		bs := make(Slice, k*n)
		bt.Float64sFrom(0, bs)
		got, want := make([]float64, m*n), make([]float64, m*n)
		Mul(m, k, n, Slice(a), bt, got)
		Mul(m, k, n, Slice(a), bs, want)
		gotD, gotS, wantD, wantS := make([]float64, m*n), make([]float64, m*n), make([]float64, m*n), make([]float64, m*n)
		MulAbs(m, k, n, Slice(a), bt, gotD, gotS)
		MulAbs(m, k, n, Slice(a), bs, wantD, wantS)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("dgemm Mul fp16 B m=%d k=%d n=%d seed=%d: element %d = %v (%#x), want (B as a Slice) %v (%#x)", m, k, n, seed, i, got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
			}
			if math.Float64bits(gotD[i]) != math.Float64bits(wantD[i]) || math.Float64bits(gotS[i]) != math.Float64bits(wantS[i]) {
				t.Fatalf("dgemm MulAbs fp16 B m=%d k=%d n=%d seed=%d: element %d: d = %#x, s = %#x, want (B as a Slice) %#x, %#x", m, k, n, seed, i,
					math.Float64bits(gotD[i]), math.Float64bits(gotS[i]), math.Float64bits(wantD[i]), math.Float64bits(wantS[i]))
			}
		}
	}
}
