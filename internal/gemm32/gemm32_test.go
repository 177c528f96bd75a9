package gemm32

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// value draws a float32 of the given kind: "fp16" (an fp16 value: exact
// products), "fp32" (any finite fp32, subnormals and huge values
// included: inexact, overflowing and underflowing products), "special"
// (any bit pattern: Inf, NaN, signalling NaN); ±0 one time in eight.
func value(r *rand.Rand, kind string) float32 {
	if r.IntN(8) == 0 {
		return math.Float32frombits(uint32(r.IntN(2)) << 31)
	}
	switch kind {
	case "fp16":
		e := r.IntN(40) - 24 // subnormal fp16 up to 2^15
		return float32(math.Ldexp(float64(r.IntN(2048)-1024), e-10))
	case "fp32":
		for {
			v := math.Float32frombits(r.Uint32())
			if !math.IsInf(float64(v), 0) && v == v {
				return v
			}
		}
	case "small":
		return float32(r.IntN(9) - 4)
	}
	return math.Float32frombits(r.Uint32())
}

// matrices draws A [m × k] (row stride lda), B [k × n] (row stride ldb)
// and C [m × n] (row stride ldc) of the given kinds, strides padded at
// random; the padding holds NaN so that a read of it shows.
func matrices(r *rand.Rand, m, n, k int, kindAB, kindC string) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	lda, ldb, ldc = k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
	fill := func(rows, cols, ld int, kind string) []float32 {
		s := make([]float32, max(0, (rows-1)*ld+cols))
		for i := range s {
			s[i] = float32(math.NaN())
			if i%ld < cols {
				s[i] = value(r, kind)
			}
		}
		return s
	}
	return fill(m, k, lda, kindAB), lda, fill(k, n, ldb, kindAB), ldb, fill(m, n, ldc, kindC), ldc
}

// TestFloat32MatchesSequential checks Float32 (assembly where the CPU has
// it) and Float32Portable against the sequential model written
// plainly (fma32 per element, k ascending) on random shapes, edge sizes
// off the 6×16 register block included, with fp16-valued, any finite
// fp32 and special (Inf, NaN, signalling NaN, −0, subnormal) operands and
// accumulators: the same bits, every NaN the default NaN 0xFFC00000
// whatever the operands' payloads (k > 0), and the padding between rows
// untouched.
func TestFloat32MatchesSequential(t *testing.T) {
	for _, name := range fp32Kernels() {
		restore := useFP32Kernel(name)
		float32MatchesSequential(t, name)
		restore()
	}
}

// float32MatchesSequential is TestFloat32MatchesSequential with kernelAsm
// the fp32 micro-kernel name.
func float32MatchesSequential(t *testing.T, kernel string) {
	const seed = 5
	r := rand.New(rand.NewPCG(seed, 2))
	kinds := []string{"fp16", "fp32", "special", "small"}
	for trial := range 600 {
		m, n, k := 1+r.IntN(30), 1+r.IntN(50), r.IntN(70)
		if trial%5 == 0 {
			m, n = mr*(1+r.IntN(4)), nr*(1+r.IntN(3))
		}
		kindAB, kindC := kinds[r.IntN(4)], kinds[r.IntN(4)]
		a, lda, b, ldb, c0, ldc := matrices(r, m, n, k, kindAB, kindC)
		want := append([]float32(nil), c0...)
		for i := range m {
			for j := range n {
				acc := want[i*ldc+j]
				for kk := range k {
					acc = fma32(a[i*lda+kk], b[kk*ldb+j], acc)
				}
				want[i*ldc+j] = acc
			}
		}
		for _, run := range []struct {
			name string
			f    func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)
		}{{"Float32", Float32}, {"Float32Portable", Float32Portable}, {"PackFloat32+MulAdd", packedInTwo}, {"PackRows+MulAdd by blocks of k", packedByK}} {
			got := append([]float32(nil), c0...)
			run.f(m, n, k, a, lda, b, ldb, got, ldc)
			for i := range got {
				g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
				if got[i] != got[i] && k > 0 && i%ldc < n && g != 0xFFC00000 {
					t.Fatalf("%s kernel=%s M=%d N=%d K=%d A,B=%s C=%s seed=%d trial %d: C[%d,%d]: got NaN %#08x / want the default NaN 0xffc00000",
						run.name, kernel, m, n, k, kindAB, kindC, seed, trial, i/ldc, i%ldc, g)
				}
				if g != w {
					t.Fatalf("%s kernel=%s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d A,B=%s C=%s seed=%d trial %d: C[%d,%d]: got %#08x (%g) / want %#08x (%g) (sequential fma32)",
						run.name, kernel, m, n, k, lda, ldb, ldc, kindAB, kindC, seed, trial, i/ldc, i%ldc, g, got[i], w, want[i])
				}
			}
		}
	}
}

// packedInTwo is Float32 through PackFloat32 (or PackFloat32Rows, for
// odd m) and MulAdd, A's rows in two
// blocks (the first of 1…m rows), as a caller splitting rows over cores
// would run it.
func packedInTwo(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	p := PackFloat32(k, n, b, ldb)
	if m%2 == 1 { // the other packing, for half the trials
		p = PackFloat32Rows(k, n, func(kk int, dst []float32) { copy(dst, b[kk*ldb:kk*ldb+n]) })
	}
	split := (m*7 + 3) / 11
	if split == 0 {
		split = m
	}
	p.MulAdd(split, a, lda, c, ldc)
	if split < m {
		p.MulAdd(m-split, a[split*lda:], lda, c[split*ldc:], ldc)
	}
}

// packedByK is Float32 as a caller that holds one block of B's rows at a
// time runs it: B's rows in three blocks (uneven, the first of 1…k rows),
// each packed by PackRows into the same PackedFloat32 and multiplied by
// its columns of A into C. Every element of C then still sees its terms
// in ascending k, each an fma32 on the value the previous block stored.
func packedByK(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if k == 0 {
		return
	}
	var p PackedFloat32
	cuts := []int{0, max(1, (k*5+2)/11), max(1, (k*9+1)/11), k}
	for q := range 3 {
		pc, kcc := cuts[q], cuts[q+1]-cuts[q]
		if kcc <= 0 {
			continue
		}
		p.PackRows(kcc, n, func(kk int, dst []float32) { copy(dst, b[(pc+kk)*ldb:(pc+kk)*ldb+n]) })
		if m > 0 {
			p.MulAdd(m, a[pc:], lda, c, ldc)
		}
	}
}

// BenchmarkKernel6x16 is each fp32 micro-kernel this machine runs, on
// one tile.
func BenchmarkKernel6x16(b *testing.B) {
	for _, name := range fp32Kernels() {
		for _, k := range []int{64, 256} {
			b.Run(fmt.Sprintf("%s/%d", name, k), func(b *testing.B) {
				defer useFP32Kernel(name)()
				a := make([]float32, mr*k)
				bp := make([]float32, k*nr)
				c := make([]float32, mr*nr)
				for i := range a {
					a[i] = 1
				}
				for b.Loop() {
					kernelAsm(k, a, k, bp, c, nr)
				}
				b.ReportMetric(2*mr*nr*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkFloat32 is the single-threaded C += A·B at the shapes of the
// emulated gemm's Mmad at 1024³ (128×176, k 64, A and B rows 1024
// apart) and a square 256.
func BenchmarkFloat32(b *testing.B) {
	for _, s := range [][4]int{{128, 176, 64, 1024}, {256, 256, 256, 256}} {
		m, n, k, ld := s[0], s[1], s[2], s[3]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			a, bb, c := make([]float32, m*ld), make([]float32, k*ld), make([]float32, m*n)
			for b.Loop() {
				Float32(m, n, k, a, ld, bb, ld, c, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestInt32MatchesSequential checks Int32 and Int32Portable against the
// plain triple loop (int32 wrap-around) on random shapes, edge sizes
// included, with int8 values and with any int32 (products and sums that
// wrap), and requires the padding between rows untouched.
func TestInt32MatchesSequential(t *testing.T) {
	const seed = 13
	r := rand.New(rand.NewPCG(seed, 4))
	for trial := range 400 {
		m, n, k := 1+r.IntN(30), 1+r.IntN(50), r.IntN(140)
		if trial%5 == 0 {
			m, n = mr*(1+r.IntN(4)), nr*(1+r.IntN(3))
		}
		wide := trial%2 == 0
		draw := func() int32 {
			if wide {
				return int32(r.Uint32())
			}
			return int32(r.IntN(256) - 128)
		}
		lda, ldb, ldc := k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
		fill := func(rows, cols, ld int) []int32 {
			s := make([]int32, max(0, (rows-1)*ld+cols))
			for i := range s {
				s[i] = 0x5A5A5A5A
				if i%ld < cols {
					s[i] = draw()
				}
			}
			return s
		}
		a, b, c0 := fill(m, k, lda), fill(k, n, ldb), fill(m, n, ldc)
		want := append([]int32(nil), c0...)
		for i := range m {
			for j := range n {
				for kk := range k {
					want[i*ldc+j] += a[i*lda+kk] * b[kk*ldb+j]
				}
			}
		}
		for _, run := range []struct {
			name string
			f    func(m, n, k int, a []int32, lda int, b []int32, ldb int, c []int32, ldc int)
		}{{"Int32", Int32}, {"Int32Portable", Int32Portable}} {
			got := append([]int32(nil), c0...)
			run.f(m, n, k, a, lda, b, ldb, got, ldc)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d wide=%v seed=%d trial %d: C[%d,%d]: got %d / want %d (triple loop)",
						run.name, m, n, k, lda, ldb, ldc, wide, seed, trial, i/ldc, i%ldc, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkInt32 is Int32 at the int8 gemm's Mmad shape at 1024³
// (128×176, k 128, rows 1024 apart).
func BenchmarkInt32(b *testing.B) {
	const m, n, k, ld = 128, 176, 128, 1024
	a, bb, c := make([]int32, m*ld), make([]int32, k*ld), make([]int32, m*n)
	for b.Loop() {
		Int32(m, n, k, a, ld, bb, ld, c, n)
	}
	b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
}

// TestPackPanelsMatchesPackRows holds PackPanels to PackRows on the same
// B, element for element of the packed block, padding included, on
// shapes around the panel width and the pieces' 16 rows, with values of
// every kind (±0, subnormals, ±Inf, NaN among ordinary ones); a packed
// block of the same memory as a previous, larger one (p reused) must
// come out the same too; and all of it with Serial set, when no two of
// the callbacks may run at once.
func TestPackPanelsMatchesPackRows(t *testing.T) {
	const seed = 3
	r := rand.New(rand.NewPCG(seed, 0))
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-45, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	var rowsP, panelsP PackedFloat32
	for _, serial := range []bool{false, true} {
		rowsP.Serial, panelsP.Serial = serial, serial
		for _, k := range []int{200, 1, 15, 16, 17, 64, 65} {
			for _, n := range []int{100, 1, 15, 16, 17, 33} {
				b := make([]float32, k*n)
				for i := range b {
					b[i] = float32(r.NormFloat64())
					if r.IntN(8) == 0 {
						b[i] = specials[r.IntN(len(specials))]
					}
				}
				// Serial packs on the caller's goroutine: no two calls at
				// once. Each pack's first call waits a millisecond, in which
				// the calls of any other goroutine would start.
				var inFlight, most atomic.Int32
				var started atomic.Bool
				enter := func() {
					if c := inFlight.Add(1); c > 1 {
						most.Store(c)
					}
					if started.CompareAndSwap(false, true) {
						time.Sleep(time.Millisecond)
					}
				}
				started.Store(false)
				rowsP.PackRows(k, n, func(kk int, dst []float32) {
					enter()
					defer inFlight.Add(-1)
					copy(dst, b[kk*n:(kk+1)*n])
				})
				started.Store(false)
				panelsP.PackPanels(k, n, func(kk0, rows, j0, cols int, dst []float32) {
					enter()
					defer inFlight.Add(-1)
					if rows < 1 || rows > 16 || cols < 1 || cols > PanelWidth || j0%PanelWidth != 0 || len(dst) != rows*PanelWidth {
						t.Fatalf("gemm32 PackPanels k=%d n=%d serial=%v seed=%d: piece(kk0=%d, rows=%d, j0=%d, cols=%d, len(dst)=%d) out of its contract", k, n, serial, seed, kk0, rows, j0, cols, len(dst))
					}
					for rr := range rows {
						copy(dst[rr*PanelWidth:rr*PanelWidth+cols], b[(kk0+rr)*n+j0:])
					}
				})
				if serial && most.Load() > 1 {
					t.Fatalf("gemm32 PackRows, PackPanels k=%d n=%d serial=true seed=%d: %d calls at once, want 1", k, n, seed, most.Load())
				}
				if len(panelsP.bp) != len(rowsP.bp) {
					t.Fatalf("gemm32 PackPanels k=%d n=%d serial=%v seed=%d: %d packed values, want (PackRows) %d", k, n, serial, seed, len(panelsP.bp), len(rowsP.bp))
				}
				for i, v := range panelsP.bp {
					if math.Float32bits(v) != math.Float32bits(rowsP.bp[i]) {
						t.Fatalf("gemm32 PackPanels k=%d n=%d serial=%v seed=%d: packed value %d = %#08x, want (PackRows) %#08x", k, n, serial, seed, i, math.Float32bits(v), math.Float32bits(rowsP.bp[i]))
					}
				}
			}
		}
	}
}
