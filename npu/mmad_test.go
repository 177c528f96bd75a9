package npu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// mmadCase is one seeded cross-check of Mmad against mmadReference.
type mmadCase struct {
	in, acc        tensor.DType
	blocked        bool
	init, exact32  bool
	m, k, n, baseK int
	distA, distB   string
	seed           uint64
}

func (c mmadCase) String() string {
	return fmt.Sprintf("Mmad in=%s acc=%s blocked=%v init=%v exact32=%v M=%d K=%d N=%d baseK=%d a=%s b=%s seed=%d",
		c.in, c.acc, c.blocked, c.init, c.exact32, c.m, c.k, c.n, c.baseK, c.distA, c.distB, c.seed)
}

// mmadDists are the operand distributions: small values with many exact
// products and signed zeros, values over the whole finite range (inexact
// fp32 products, subnormals, overflow), and any bit pattern (Inf, NaN).
var mmadDists = []string{"small", "wide", "special"}

// mmadValue draws one value of dtype d from dist, as its bits.
func mmadValue(r *rand.Rand, d tensor.DType, dist string) uint64 {
	t := tensor.MustNew(d, 1)
	if d == tensor.Int8 {
		v := r.IntN(256) - 128
		if dist == "small" {
			v = r.IntN(9) - 4
		}
		t.SetFloat64(0, float64(v), tensor.Numerics{})
		return t.Bits(0)
	}
	switch {
	case r.IntN(8) == 0:
		t.SetFloat64(0, math.Copysign(0, float64(r.IntN(2)*2-1)), tensor.Numerics{})
	case dist == "special":
		t.SetBits(0, r.Uint64()&(1<<(8*d.Size())-1))
	case dist == "wide":
		t.SetFloat64(0, randVal(r, d), tensor.Numerics{})
	default:
		t.SetFloat64(0, math.Ldexp(float64(r.IntN(9)-4), -r.IntN(4)), tensor.Numerics{})
	}
	return t.Bits(0)
}

// mmadMatrix returns a [rows × cols] tensor of dtype d drawn from dist.
func mmadMatrix(r *rand.Rand, d tensor.DType, dist string, rows, cols int) *tensor.Tensor {
	t := tensor.MustNew(d, rows, cols)
	for i := range t.Len() {
		t.SetBits(i, mmadValue(r, d, dist))
	}
	return t
}

// mmadInitAcc fills the accumulators with values a previous Mmad could
// leave: values of the accumulator format, including ±Inf and NaN; for
// Exact32, neither −0 nor a signalling NaN (the MmadParams.Exact32
// contract).
func mmadInitAcc(r *rand.Rand, c mmadCase, cf []float32, ci []int32) {
	for i := range ci {
		ci[i] = int32(r.IntN(1<<20) - 1<<19)
	}
	for i := range cf {
		for {
			v := math.Float32frombits(uint32(mmadValue(r, tensor.Float32, "special")))
			if c.acc == tensor.Float16 || r.IntN(2) == 0 {
				f := tensor.MustNew(c.acc, 1)
				f.SetBits(0, mmadValue(r, c.acc, mmadDists[r.IntN(len(mmadDists))]))
				v = float32(f.Float64(0))
			}
			u := math.Float32bits(v)
			if c.exact32 && (u == 0x80000000 || (v != v && u&0x00400000 == 0)) {
				continue
			}
			cf[i] = v
			break
		}
	}
}

// TestMmadFastMatchesReference runs Mmad (its fast paths: mmadFMA, mmadInt,
// mmadBlocked, mmadGer, mmadSaxpy, mmadFused) and mmadReference, the
// accumulate model written plainly, on the same seeded operands and
// requires the same bits in every accumulator after every Mmad: every
// gemm mode's input and accumulator dtypes (and the fp16 accumulator of
// the fp16-accumulation fault under fp32 and bf16 inputs), sequential and
// blocked16, odd sizes padded to the fractal, K split into slices like
// the gemm kernel, from +0 (Init) or from earlier accumulators, with
// signed zeros, subnormals, Inf and NaN (of any payload: every NaN result
// must be the default NaN, nan.go). It also requires that every fast
// path ran, so that none goes unchecked. (The padded M, a multiple of 16,
// leaves mmadFMA's 6-row register block a ragged edge unless it is 48;
// gemm32's own tests cover ragged columns, which Mmad never has.)
func TestMmadFastMatchesReference(t *testing.T) {
	prof := Ascend910B()
	dev := MustNewDevice(prof)
	types := [][2]tensor.DType{
		{tensor.Float32, tensor.Float32}, {tensor.Float16, tensor.Float32}, {tensor.Float16, tensor.Float16},
		{tensor.BFloat16, tensor.Float32}, {tensor.Int8, tensor.Int32},
		{tensor.Float32, tensor.Float16}, {tensor.BFloat16, tensor.Float16},
	}
	trials := 700
	if testing.Short() {
		trials = 150
	}
	paths := map[string]int{}
	for trial := range trials {
		seed := uint64(trial)
		r := rand.New(rand.NewPCG(seed, 0x3ad))
		ty := types[r.IntN(len(types))]
		c := mmadCase{in: ty[0], acc: ty[1], blocked: r.IntN(2) == 0, init: r.IntN(2) == 0, seed: seed,
			m: 1 + r.IntN(40), k: 1 + r.IntN(100), n: 1 + r.IntN(48),
			distA: mmadDists[r.IntN(3)], distB: mmadDists[r.IntN(3)]}
		if r.IntN(4) == 0 {
			c.n = gerMaxN + 1 + r.IntN(40) // wider than mmadGer takes
		}
		if r.IntN(4) == 0 {
			// Exact products with Inf or NaN in A only, where the Exact32
			// paths other than mmadFMA run (B finite: they need it).
			c.in, c.acc, c.blocked = []tensor.DType{tensor.Float16, tensor.BFloat16}[r.IntN(2)], tensor.Float32, false
			c.distA, c.distB = "special", mmadDists[r.IntN(2)]
			if r.IntN(2) == 0 {
				c.n = gerMaxN + 1 + r.IntN(40) // mmadSaxpy's
			}
		}
		fr := prof.CubeFractal(c.in)
		kAlign := fr.K // slices keep the blocks of blocked16 aligned, as in the gemm kernel
		for c.blocked && kAlign%blockK != 0 {
			kAlign += fr.K
		}
		mc, kc, nc := roundUp(c.m, fr.M), roundUp(c.k, kAlign), roundUp(c.n, fr.N)
		size := c.in.Size()
		maxBaseK := min(kc, prof.L0ABytes/(mc*size)/kAlign*kAlign, prof.L0BBytes/(nc*size)/kAlign*kAlign)
		c.baseK = kAlign * (1 + r.IntN(maxBaseK/kAlign))
		a, b := mmadMatrix(r, c.in, c.distA, c.m, c.k), mmadMatrix(r, c.in, c.distB, c.k, c.n)
		ga, err := NewGMMatrix(a)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		gb, err := NewGMMatrix(b)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		c.exact32 = c.acc == tensor.Float32 && !c.blocked && Exact32Operands(ga, gb) && r.IntN(4) != 0
		_, err = dev.LaunchOn(t.Context(), AICore, 1, func(core *Core) error {
			var l1a, l1b L1Tile
			var l0a, l0b L0Tile
			defer l1a.Release()
			defer l1b.Release()
			var err error
			for _, x := range []struct {
				buf   **Buffer
				space Space
				bytes int
			}{
				{&l1a.Buf, L1, mc * kc * size}, {&l1b.Buf, L1, kc * nc * size},
				{&l0a.Buf, L0A, mc * c.baseK * size}, {&l0b.Buf, L0B, c.baseK * nc * size},
			} {
				if *x.buf, err = core.Alloc(x.space, x.bytes); err != nil {
					return err
				}
			}
			l0c, err := core.Alloc(L0C, mc*nc*4)
			if err != nil {
				return err
			}
			if err := core.LoadL1(&l1a, ga, 0, 0, c.m, c.k, mc, kc); err != nil {
				return err
			}
			if err := core.LoadL1(&l1b, gb, 0, 0, c.k, c.n, kc, nc); err != nil {
				return err
			}
			p0 := MmadParams{M: mc, N: nc, Acc: c.acc}
			cf, ci := mmadAccumulators(l0c, p0)
			mmadInitAcc(r, c, cf, ci)
			wantF, wantI := append([]float32(nil), cf...), append([]int32(nil), ci...)
			for kk := 0; kk < kc; kk += c.baseK {
				kb := min(c.baseK, kc-kk)
				if err := core.LoadL0(&l0a, &l1a, 0, kk, mc, kb); err != nil {
					return err
				}
				if err := core.LoadL0(&l0b, &l1b, kk, 0, kb, nc); err != nil {
					return err
				}
				p := MmadParams{M: mc, K: kb, N: nc, UsefulM: c.m, UsefulN: c.n, UsefulK: max(0, min(kb, c.k-kk)),
					Acc: c.acc, Blocked: c.blocked, Init: c.init && kk == 0, Exact32: c.exact32}
				if p.Init {
					clear(wantF)
					clear(wantI)
				}
				mmadReference(wantF, wantI, &l0a, &l0b, p, newMmadGeom(&l0a, &l0b, p))
				paths[mmadChoose(p, &l0a, &l0b, cf)]++
				if err := core.Mmad(l0c, &l0a, &l0b, p); err != nil {
					return err
				}
				for i := range wantF {
					if got, want := math.Float32bits(cf[i]), math.Float32bits(wantF[i]); got != want {
						return fmt.Errorf("accumulator (%d,%d) after the Mmad of k [%d, %d): got %#08x (%g) / want %#08x (%g) (mmadReference)",
							i/nc, i%nc, kk, kk+kb, got, cf[i], want, wantF[i])
					}
				}
				for i, v := range cf {
					// The first Mmad has UsefulK ≥ 1: from there every NaN
					// accumulator is one that arithmetic produced.
					if got := math.Float32bits(v); v != v && got != DefaultNaN32Bits {
						return fmt.Errorf("accumulator (%d,%d) after the Mmad of k [%d, %d): got NaN %#08x / want the default NaN %#08x",
							i/nc, i%nc, kk, kk+kb, got, DefaultNaN32Bits)
					}
				}
				for i := range wantI {
					if ci[i] != wantI[i] {
						return fmt.Errorf("accumulator (%d,%d) after the Mmad of k [%d, %d): got %d / want %d (mmadReference)",
							i/nc, i%nc, kk, kk+kb, ci[i], wantI[i])
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	t.Logf("Mmad cross-check, %d trials: Mmads per fast path %v", trials, paths)
	for _, p := range []string{pathFMA, pathInt, pathBlocked, pathGer, pathSaxpy, pathFused} {
		if paths[p] < trials/100 {
			t.Errorf("Mmad cross-check, %d trials: fast path %s ran %d times / want ≥ %d (paths %v)", trials, p, paths[p], trials/100, paths)
		}
	}
}

// TestMmadGerMatchesSaxpy checks that the rank-one path computes the
// saxpy path's bits, on fp16 values with zeros, Inf and NaN in A (B
// finite, as Exact32 requires), from +0 and from finite non-(−0)
// accumulators, and that holdsNegZeroOrSNaN finds what it must.
func TestMmadGerMatchesSaxpy(t *testing.T) {
	const seed = 3
	r := rand.New(rand.NewPCG(seed, 9))
	f16 := func(finite bool) float32 {
		for {
			v := f16Table()[r.IntN(1<<16)]
			switch {
			case r.IntN(8) == 0:
				v = 0
			case finite && (math.IsInf(float64(v), 0) || v != v):
				continue
			}
			return v
		}
	}
	for trial := range 60 {
		m, n, ku := 1+r.IntN(70), 16*(1+r.IntN(8)), r.IntN(80)
		lda, ldb := ku+r.IntN(5), n+r.IntN(5)
		a, b := make([]float32, m*lda+1), make([]float32, max(ku, 1)*ldb)
		for i := range a {
			a[i] = f16(trial%2 == 0)
		}
		for i := range b {
			b[i] = f16(true)
		}
		c0 := make([]float32, m*n)
		if trial%3 != 0 {
			for i := range c0 {
				c0[i] = f16(true)
				if c0[i] == 0 {
					c0[i] = 0 // +0
				}
			}
		}
		g := mmadGeom{m: m, n: n, ku: ku, lda: lda, ldb: ldb}
		want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
		mmadSaxpy(want, a, b, g)
		mmadGer(got, a, b, g)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("mmadGer M=%d K=%d N=%d seed=%d trial %d: element %d: got %#08x / want %#08x (mmadSaxpy)", m, ku, n, seed, trial, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		if holdsNegZeroOrSNaN(got) {
			t.Fatalf("mmadGer seed=%d trial %d: the accumulators hold a −0 or a signalling NaN", seed, trial)
		}
	}
	for _, u := range []uint32{0x80000000, 0x7F800001, 0xFFBFFFFF, 0x7FA00000} {
		if !holdsNegZeroOrSNaN([]float32{1, math.Float32frombits(u)}) {
			t.Errorf("holdsNegZeroOrSNaN misses %#08x", u)
		}
	}
	for _, u := range []uint32{0, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFFFFFFF, 0x80000001} {
		if holdsNegZeroOrSNaN([]float32{1, math.Float32frombits(u)}) {
			t.Errorf("holdsNegZeroOrSNaN flags %#08x", u)
		}
	}
}

// TestMmadNegZeroAccumulator: accumulating onto a −0 with a zero in A
// keeps the skip semantics of the saxpy path (−0 stays −0).
func TestMmadNegZeroAccumulator(t *testing.T) {
	dev := MustNewDevice(Ascend910B())
	_, err := dev.LaunchOn(t.Context(), AICore, 1, func(c *Core) error {
		a := tensor.MustNew(tensor.Float16, 16, 16) // all zeros
		b := tensor.MustNew(tensor.Float16, 16, 16)
		for i := range b.Len() {
			b.SetFloat64(i, 1, tensor.Numerics{})
		}
		ga, _ := NewGMMatrix(a)
		gb, _ := NewGMMatrix(b)
		var l1a, l1b L1Tile
		var l0a, l0b L0Tile
		for _, x := range []struct {
			t  *L1Tile
			s  Space
			l0 *L0Tile
		}{{&l1a, L0A, &l0a}, {&l1b, L0B, &l0b}} {
			var err error
			if x.t.Buf, err = c.Alloc(L1, 512); err != nil {
				return err
			}
			if x.l0.Buf, err = c.Alloc(x.s, 512); err != nil {
				return err
			}
		}
		if err := c.LoadL1(&l1a, ga, 0, 0, 16, 16, 16, 16); err != nil {
			return err
		}
		if err := c.LoadL1(&l1b, gb, 0, 0, 16, 16, 16, 16); err != nil {
			return err
		}
		if err := c.LoadL0(&l0a, &l1a, 0, 0, 16, 16); err != nil {
			return err
		}
		if err := c.LoadL0(&l0b, &l1b, 0, 0, 16, 16); err != nil {
			return err
		}
		l0c, err := c.Alloc(L0C, 16*16*4)
		if err != nil {
			return err
		}
		acc := l0c.F32()
		for i := range acc {
			acc[i] = float32(math.Copysign(0, -1))
		}
		p := MmadParams{M: 16, K: 16, N: 16, UsefulM: 16, UsefulK: 16, UsefulN: 16, Acc: tensor.Float32, Exact32: true}
		if err := c.Mmad(l0c, &l0a, &l0b, p); err != nil {
			return err
		}
		for i, v := range l0c.F32()[:256] {
			if math.Float32bits(v) != 0x80000000 {
				t.Fatalf("accumulator %d: got %#08x want −0 (0x80000000)", i, math.Float32bits(v))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
