package npu

import (
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// bigRound returns RN_f(Σ xs) (one rounding of the exact sum, IEEE
// signed-zero rules) via math/big: the oracle of the exact-rounding helpers.
func bigRound(f tensor.Format, xs []float64) float64 {
	s := new(big.Float).SetPrec(3000)
	allNegZero := true
	for _, x := range xs {
		s.Add(s, new(big.Float).SetFloat64(x))
		allNegZero = allNegZero && x == 0 && math.Signbit(x)
	}
	if s.Sign() == 0 {
		if allNegZero {
			return math.Copysign(0, -1)
		}
		return 0
	}
	exp := s.MantExp(nil)
	p := f.P
	if lead := exp - 1; lead < f.Emin {
		p -= f.Emin - lead
	}
	if p <= 0 {
		r := 0.0
		if new(big.Float).Abs(s).Cmp(big.NewFloat(f.MinSubnormal()/2)) > 0 {
			r = f.MinSubnormal()
		}
		return math.Copysign(r, float64(s.Sign()))
	}
	r, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(p)).Set(s).Float64()
	if math.Abs(r) > f.MaxFinite() {
		return math.Copysign(math.Inf(1), r)
	}
	return r
}

// randVal draws an fp32 (or fp16) value with a wide exponent spread, often
// near a midpoint or a binade boundary.
func randVal(r *rand.Rand, d tensor.DType) float64 {
	f, _ := d.FloatFormat()
	e := r.IntN(f.Emax-f.Emin+f.P) + f.Emin - f.P
	v := math.Ldexp(1+float64(r.Float64()), e) // converted: never fused, the same draws on every platform
	if r.IntN(4) == 0 {
		v = math.Ldexp(1, e) // a power of two
	}
	if r.IntN(2) == 0 {
		v = -v
	}
	return f.RoundNearestEven(v)
}

func TestExactRoundingHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var scratch []float64
	for _, acc := range []tensor.DType{tensor.Float32, tensor.Float16} {
		f, _ := acc.FloatFormat()
		for it := 0; it < 20000; it++ {
			c := randVal(r, acc)
			a, b := randVal(r, tensor.Float16), randVal(r, tensor.Float16)
			if acc == tensor.Float32 {
				a, b = randVal(r, tensor.Float32), randVal(r, tensor.Float32)
			}
			if r.IntN(3) == 0 {
				// Put c + a·b on (or next to) a midpoint of acc's format.
				mid := c + float64(f.Ulp(c)/2)
				a, b = float64(float32(mid-c)), 1
				if r.IntN(2) == 0 {
					a = math.Nextafter(a, math.Inf(1))
				}
				a = float64(float32(a))
			}
			got := float64(fmaRound(acc, float32(c), float32(a), float32(b)))
			want := bigRound(f, []float64{c, float64(float32(a)) * float64(float32(b))})
			if got != want && !(got == 0 && want == 0) {
				t.Fatalf("fmaRound acc=%s: c=%g a=%g b=%g: got %g / want %g (exact RN)", acc, c, a, b, got, want)
			}
			xs := []float64{c}
			for k := 0; k < 1+r.IntN(16); k++ {
				x, y := randVal(r, tensor.Float16), randVal(r, tensor.Float16)
				xs = append(xs, x*y)
			}
			got = float64(sumRound(acc, xs, &scratch))
			want = bigRound(f, xs)
			if got != want || math.Signbit(got) != math.Signbit(want) {
				t.Fatalf("sumRound acc=%s: %v: got %g / want %g (exact RN)", acc, xs, got, want)
			}
		}
	}
	// A float64 sum that lands exactly on an fp32 (fp16) midpoint while
	// the exact value lies just off it: lo decides.
	for _, tt := range []struct {
		hi, lo, want32, want16 float64
	}{
		{1 + 0x1p-24, 0x1p-70, 1 + 0x1p-23, 1},
		{1 + 0x1p-24, -0x1p-70, 1, 1},
		{1 + 0x1p-11, 0x1p-70, 1 + 0x1p-11, 1 + 0x1p-10},
		{1 + 0x1p-11, -0x1p-70, 1 + 0x1p-11, 1},
		{-(3 + 0x1p-23), 0x1p-80, -3, -3},
		{-(3 + 0x1p-23), -0x1p-80, -(3 + 0x1p-22), -3},
	} {
		if got := float64(roundHiLo32(tt.hi, tt.lo)); got != tt.want32 {
			t.Errorf("roundHiLo32(%v, %v): got %v / want %v", tt.hi, tt.lo, got, tt.want32)
		}
		if got := roundHiLo16(tt.hi, tt.lo); got != tt.want16 {
			t.Errorf("roundHiLo16(%v, %v): got %v / want %v", tt.hi, tt.lo, got, tt.want16)
		}
	}
	// Signed zeros and overflow at the threshold.
	if got := sumRound(tensor.Float32, []float64{math.Copysign(0, -1), math.Copysign(0, -1)}, &scratch); !math.Signbit(float64(got)) {
		t.Errorf("sumRound(−0, −0): got %g / want −0", got)
	}
	thr := 0x1.ffffffp127
	if got := roundHiLo32(thr, -1e-300); got != math.MaxFloat32 {
		t.Errorf("roundHiLo32(threshold, −tiny): got %g / want MaxFloat32", got)
	}
	if got := roundHiLo32(thr, 0); !math.IsInf(float64(got), 1) {
		t.Errorf("roundHiLo32(threshold, 0): got %g / want +Inf", got)
	}
}

func TestCubePrimitiveChecks(t *testing.T) {
	dev := MustNewDevice(Ascend910B())
	_, err := dev.LaunchOn(t.Context(), AICore, 1, func(c *Core) error {
		if _, err := c.Alloc(L0A, 64<<10+1); err == nil {
			t.Errorf("Alloc L0A 64 KiB + 1: got nil error / want capacity error")
		}
		a, _ := c.Alloc(L0A, 100)
		if a.Len() != 512 {
			t.Errorf("Alloc L0A 100 bytes: got %d bytes / want 512 (alignment)", a.Len())
		}
		l1, _ := c.Alloc(L1, 32*32*2)
		src := tensor.MustNew(tensor.Float16, 20, 20)
		g, _ := NewGMMatrix(src)
		tile := L1Tile{Buf: l1}
		if err := c.LoadL1(&tile, g, 0, 0, 20, 20, 32, 32); err != nil {
			t.Fatal(err)
		}
		at := L0Tile{Buf: a}
		if err := c.LoadL0(&at, &tile, 0, 0, 16, 24); err == nil {
			t.Errorf("LoadL0 16×24: got nil error / want fractal error")
		}
		b, _ := c.Alloc(L0B, 16*16*2)
		bt := L0Tile{Buf: b}
		if err := c.LoadL0(&at, &tile, 0, 0, 16, 16); err != nil {
			t.Fatal(err)
		}
		if err := c.LoadL0(&bt, &tile, 0, 0, 16, 16); err != nil {
			t.Fatal(err)
		}
		l0c, _ := c.Alloc(L0C, 16*16*4)
		if err := c.Mmad(l0c, &at, &bt, MmadParams{M: 16, K: 16, N: 32, Acc: tensor.Float32}); err == nil {
			t.Errorf("Mmad N=32 with a 16-wide B: got nil error / want shape error")
		}
		if err := c.Mmad(l0c, &at, &bt, MmadParams{M: 16, K: 16, N: 16, UsefulK: 16, Acc: tensor.Int32}); err == nil {
			t.Errorf("Mmad fp16 into int32: got nil error / want accumulator error")
		}
		if err := c.Mmad(l0c, &at, &bt, MmadParams{M: 16, K: 16, N: 16, UsefulM: 16, UsefulK: 16, UsefulN: 16, Acc: tensor.Float32, Init: true}); err != nil {
			t.Fatal(err)
		}
		cc := c.Counters()
		if cc.CubeMACs != 4096 || cc.CubeCycles != 1 || cc.CubeUsefulMACs != 4096 {
			t.Errorf("Mmad 16×16×16: got MACs %d cycles %d useful %d / want 4096, 1, 4096", cc.CubeMACs, cc.CubeCycles, cc.CubeUsefulMACs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDecodeRows checks the fp16 and bf16 rows of decodeBlock on every
// bit pattern against float16 and tensor.BF16, and scanF16's Inf/NaN and
// ±0 reports.
func TestDecodeRows(t *testing.T) {
	h, bf := make([]float16.Float16, 1<<16), make([]tensor.BF16, 1<<16)
	for i := range h {
		h[i], bf[i] = float16.Float16(i), tensor.BF16(i)
	}
	dh, db := make([]float32, len(h)), make([]float32, len(bf))
	decodeF16Row(dh, h)
	decodeBF16Row(db, bf)
	for i := range dh {
		if want := float16.Frombits(uint16(i)).Float32(); math.Float32bits(dh[i]) != math.Float32bits(want) {
			t.Fatalf("decodeF16Row(%#04x) = %#08x want %#08x", i, math.Float32bits(dh[i]), math.Float32bits(want))
		}
		if want := tensor.BF16(i).Float32(); math.Float32bits(db[i]) != math.Float32bits(want) {
			t.Fatalf("decodeBF16Row(%#04x) = %#08x want %#08x", i, math.Float32bits(db[i]), math.Float32bits(want))
		}
	}
	if nonFinite, zero := scanF16(h); !nonFinite || !zero {
		t.Errorf("scanF16(all patterns) = %v, %v want true, true", nonFinite, zero)
	}
	for _, c := range []struct {
		bits            []uint16
		nonFinite, zero bool
	}{
		{nil, false, false}, {[]uint16{0x3C00, 0x0001}, false, false}, {[]uint16{0x3C00, 0x8000}, false, true},
		{[]uint16{0x0000}, false, true}, {[]uint16{0x7C00, 0x3C00}, true, false}, {[]uint16{0xFE00}, true, false},
		{[]uint16{0x7BFF, 0xFBFF}, false, false},
	} {
		s := make([]float16.Float16, len(c.bits))
		for i, b := range c.bits {
			s[i] = float16.Float16(b)
		}
		if nf, z := scanF16(s); nf != c.nonFinite || z != c.zero {
			t.Errorf("scanF16(%#04x) = %v, %v want %v, %v", c.bits, nf, z, c.nonFinite, c.zero)
		}
	}
}

// TestDecodeBlock: the block lands at the top left of the tile, row by
// row, and every other element of the tile (stale values before) is
// zero.
func TestDecodeBlock(t *testing.T) {
	const ld, row0, col0, rows, cols, tileRows, tileCols = 7, 2, 3, 3, 4, 5, 6
	src := make([]int8, 6*ld)
	for i := range src {
		src[i] = int8(i + 1)
	}
	dst := make([]int32, tileRows*tileCols)
	for i := range dst {
		dst[i] = -1
	}
	decodeBlock(dst, tileCols, src, ld, row0, col0, rows, cols, tileRows, decodeI8Row)
	for r := range tileRows {
		for c := range tileCols {
			want := int32(0)
			if r < rows && c < cols {
				want = int32(src[(row0+r)*ld+col0+c])
			}
			if got := dst[r*tileCols+c]; got != want {
				t.Errorf("decodeBlock %d×%d at (%d,%d) into %d×%d: element (%d,%d) = %d, want %d", rows, cols, row0, col0, tileRows, tileCols, r, c, got, want)
			}
		}
	}
}

// TestRN16MatchesFormat checks rn16 against fp16Format.RoundNearestEven
// on random float64 values over fp16's range and beyond (subnormals,
// the subnormal/normal boundary, ties, the overflow threshold, signed
// zeros), and fmaRound16 against fmaRound(Float16, ·) on random fp16,
// bf16-like and fp32 operands, NaN and Inf included.
func TestRN16MatchesFormat(t *testing.T) {
	const seed = 17
	r := rand.New(rand.NewPCG(seed, 5))
	check := func(x float64) {
		t.Helper()
		if got, want := rn16(x), fp16Format.RoundNearestEven(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("rn16 seed=%d x=%v (%#016x): got %v / want %v (RoundNearestEven)", seed, x, math.Float64bits(x), got, want)
		}
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 65504, 65519.99, 65520, 65536, 0x1p-14, 0x1p-24, 0x1p-25, 0x1.0000001p-25, 0x1.ffp-15, 0x1.ffep-15, 1e300, 1e-300} {
		check(x)
		check(-x)
	}
	for range 1_000_000 {
		x := math.Ldexp(1+float64(r.Float64()), r.IntN(60)-40) // converted: never fused
		switch r.IntN(3) {
		case 0: // a tie or near-tie of fp16 at x's exponent
			q := math.Ldexp(1, max(math.Ilogb(x)-10, -24))
			x = float64((math.Floor(x/q) + 0.5) * q) // converted: not fused into the next line's sum
			x = math.Nextafter(x, x+float64(r.IntN(3)-1))
		case 1:
			x = float64(math.Float32frombits(r.Uint32() & 0x7F7FFFFF))
		}
		if r.IntN(2) == 0 {
			x = -x
		}
		check(x)
	}
	vals := func() float32 {
		switch r.IntN(4) {
		case 0:
			return f16Table()[r.IntN(1<<16)]
		case 1:
			return math.Float32frombits(r.Uint32())
		case 2:
			return math.Float32frombits(r.Uint32() & 0xFFFF0000)
		}
		return float32(r.IntN(9) - 4)
	}
	for range 1_000_000 {
		c, a, b := f16Table()[r.IntN(1<<16)], vals(), vals()
		got, want := fmaRound16(c, a, b), fmaRound(tensor.Float16, c, a, b)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fmaRound16 seed=%d c=%#08x a=%#08x b=%#08x: got %#08x / want %#08x (fmaRound)", seed, math.Float32bits(c), math.Float32bits(a), math.Float32bits(b), math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestNewGMMatrixScansF16InParts: an fp16 operand scanned in parts (four
// cores, a grain of 8 values) reports an Inf or NaN (NonFinite) and a ±0
// (not zeroFree) wherever the one special value among 1s lies, and
// neither for finite non-zero ones.
func TestNewGMMatrixScansF16InParts(t *testing.T) {
	defer func(g, p int) { scanF16Grain = g; runtime.GOMAXPROCS(p) }(scanF16Grain, runtime.GOMAXPROCS(4))
	scanF16Grain = 8
	const rows, cols = 4, 25
	for _, u := range []uint16{0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFD01, 0x7BFF, 0x0001, 0x8001} {
		wantNF := u&0x7C00 == 0x7C00
		wantZeroFree := u&0x7FFF != 0
		for p := range rows * cols {
			src := tensor.MustNew(tensor.Float16, rows, cols)
			v := src.F16()
			for i := range v {
				v[i] = float16.Float16(0x3C00) // 1
			}
			v[p] = float16.Float16(u)
			g, err := NewGMMatrix(src)
			if err != nil {
				t.Fatal(err)
			}
			if g.NonFinite != wantNF || g.zeroFree != wantZeroFree {
				t.Fatalf("NewGMMatrix fp16 [%d %d], %#04x at %d, the rest 1: NonFinite %v, zeroFree %v; want %v, %v", rows, cols, u, p, g.NonFinite, g.zeroFree, wantNF, wantZeroFree)
			}
		}
	}
	g, err := NewGMMatrix(tensor.MustNew(tensor.Float16, 0, 5))
	if err != nil {
		t.Fatal(err)
	}
	if g.NonFinite || !g.zeroFree {
		t.Errorf("NewGMMatrix fp16 [0 5]: NonFinite %v, zeroFree %v; want false, true", g.NonFinite, g.zeroFree)
	}
}

// TestScanF16Lanes holds scanF16, which tests sixteen values at a time
// as 16-bit lanes (scanF16AVX2, where the CPU has AVX2) and the rest four
// at a time as the lanes of a word (scanF16Go), to its definition (some
// |v| has an all-ones exponent; some v is ±0) for every fp16 pattern at
// every position of slices of 1 to 13 values, and of 15 to 49 (every
// pattern near the thresholds, every 61st of the rest), that start at
// every element offset from a word, among 1s, among the smallest
// subnormals (0x0001: a lane that a borrow from below would wrap) and
// among the largest finite values (0x7BFF: one below the Inf threshold).
func TestScanF16Lanes(t *testing.T) {
	buf := make([]float16.Float16, 3+49)
	for _, fill := range []uint16{0x3C00, 0x0001, 0x7BFF} {
		for u := range 1 << 16 {
			a := uint16(u) & 0x7FFF
			wantNF, wantZero := a >= 0x7C00, a == 0
			ns := []int{1, 3, 4, 5, 8, 9, 13}
			if a <= 2 || a >= 0x7BFE || u%61 == 0 {
				ns = append(ns, 15, 16, 17, 31, 32, 33, 48, 49)
			}
			for _, n := range ns {
				for off := range 4 {
					for p := range n {
						s := buf[off : off+n]
						for i := range s {
							s[i] = float16.Float16(fill)
						}
						s[p] = float16.Float16(u)
						if nf, z := scanF16(s); nf != wantNF || z != wantZero {
							t.Fatalf("scanF16 of %d values (offset %d) of %#04x with %#04x at %d = %v, %v; want %v, %v", n, off, fill, u, p, nf, z, wantNF, wantZero)
						}
					}
				}
			}
		}
	}
}

// BenchmarkScanF16 is the operand scan of NewGMMatrix on 2^20 fp16
// values with neither a ±0 nor an Inf or NaN (the whole slice read).
func BenchmarkScanF16(b *testing.B) {
	s := make([]float16.Float16, 1<<20)
	for i := range s {
		s[i] = float16.Float16(0x3C00 + i%1000)
	}
	b.SetBytes(int64(2 * len(s)))
	for b.Loop() {
		if nf, z := scanF16(s); nf || z {
			b.Fatal("found one")
		}
	}
}
