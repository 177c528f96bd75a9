package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// TestCopiedChunksMatchChunkOf holds Compute with copied chunks taken by
// Stream.addCopied to Compute with the metrics apart and every chunk
// through chunkOf (the sums and the metrics), bit for bit, on
// an output stored back from its input with a span written: fp16 and
// bf16, a profile that keeps non-finite values and one that saturates,
// on one to three cores (so the groups of four fall differently). The
// base's chunks, each of its own magnitude, hold normal and subnormal
// values and zeros of both signs (the first the largest finite too), and
// some hold NaN or Inf (as a cache's unread
// tail does); one chunk has a span written, one an element changed, and
// the last is short.
func TestCopiedChunksMatchChunkOf(t *testing.T) {
	const chunks, seed = 11, 3
	n := chunks*sumChunk + 1000
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}} {
			got, want := copiedCase(t, d, num, n, seed)
			cc := newCopiedChunks(got, want)
			if cc == nil {
				t.Fatalf("verify %s %v seed=%d: no copied chunks found, want the fast path to apply", d, num, seed)
			}
			// The case takes the fast path where it should: chunks 0 and 1
			// are finite, 2 holds NaN, 4 nothing else and 5 Inf (copied
			// unless the profile saturates), 7 has the span, 9 the changed
			// element, and the last is short.
			keeps := num.Overflow != tensor.OverflowSaturate
			type kind struct{ ok, finite, none bool }
			for c, w := range map[int]kind{0: {true, true, false}, 1: {true, true, false}, 2: {keeps, false, false},
				4: {keeps, false, keeps}, 5: {keeps, false, false}, 7: {}, 9: {}, chunks: {}} {
				p := newMetricsPart()
				a := c * sumChunk
				k := min(sumChunk, n-a)
				acc := p.computeUnchanged(got, want, cc.base, cc.num, cc.spans, a, a+k, make([]float64, block))
				if ok, finite, none := copiedOf(acc, k); (kind{ok, finite, none}) != w {
					t.Errorf("verify %s %v seed=%d: copiedOf(chunk %d) = %v, %v, %v, want %v, %v, %v", d, num, seed, c, ok, finite, none, w.ok, w.finite, w.none)
				}
			}
			// Each chunk's sums, bit for bit (%+v prints a float64 exactly),
			// and the metrics: an output that is nearly all copies has a
			// cosine of 1 whatever a copied chunk's sums, so the metrics
			// alone would miss a wrong one.
			nc := (n + sumChunk - 1) / sumChunk
			for _, procs := range []int{1, 2, 3} {
				prev := runtime.GOMAXPROCS(procs)
				slowChunks, fastChunks := make([]chunkSums, nc), make([]chunkSums, nc)
				fastCopied = false
				chunksOf(got, want, 0, 0, n, slowChunks)
				slow := Compute(got, want)
				fastCopied = true
				st := newStream(got, n)
				st.add(want, n)
				copy(fastChunks, st.chunks)
				fast := Compute(got, want)
				runtime.GOMAXPROCS(prev)
				for c := range nc {
					if g, w := fmt.Sprintf("%+v", fastChunks[c]), fmt.Sprintf("%+v", slowChunks[c]); g != w {
						t.Errorf("verify %s %v seed=%d GOMAXPROCS=%d: chunk %d: sums with copied chunks = %s, want (through chunkOf) %s", d, num, seed, procs, c, g, w)
					}
				}
				if g, w := fmt.Sprintf("%+v", fast), fmt.Sprintf("%+v", slow); g != w {
					t.Errorf("verify %s %v seed=%d GOMAXPROCS=%d: Compute with copied chunks = %s, want (every chunk through chunkOf) %s", d, num, seed, procs, g, w)
				}
			}
		}
	}
}

// copiedCase builds, from seed, a base of n values of d, the Expected of
// it stored back unchanged under num with a span of chunk 7 overridden,
// and got: the base with the span written and one element of chunk 9
// changed by an ulp.
func copiedCase(t *testing.T, d tensor.DType, num tensor.Numerics, n int, seed uint64) (*tensor.Tensor, *bound.Expected) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	f, _ := d.FloatFormat()
	base := tensor.MustNew(d, n)
	for i := range n {
		// Each chunk of its own magnitude, so that chunks taken together
		// have scales of their own.
		c := i / sumChunk
		v := r.NormFloat64() * math.Ldexp(1, r.IntN(6)+3*(c%5)-9)
		switch k := r.IntN(64); {
		case k <= 2:
			v = finiteEdge(r, f, k)
		case k == 3 && c == 0:
			v = math.Copysign(f.MaxFinite(), r.NormFloat64())
		}
		switch {
		case c == 2 && i%sumChunk >= 5000, c == 4:
			v = math.NaN() // an unread tail
		case c == 5 && i%sumChunk == 17:
			v = math.Inf(-1)
		}
		base.SetFloat64(i, v, tensor.Numerics{})
	}
	want := bound.NewUnchanged(base, num)
	got := base.Clone()
	const spanOff, spanN = 7*sumChunk + 100, 300
	o, err := want.Override(spanOff, spanN)
	if err != nil {
		t.Fatal(err)
	}
	for j := range spanN {
		x := r.NormFloat64()
		o.Ref[j], o.Bound[j], o.Alt[j] = bound.Output(x, f.Ulp(x), d, num)
		got.SetFloat64(spanOff+j, x, num)
	}
	i := 9*sumChunk + 4321
	x := base.Float64(i)
	got.SetFloat64(i, x+f.Ulp(x), num)
	return got, want
}

// TestSixteenBitLanes holds the word-at-a-time scans of 16-bit values
// (sameRun16, zeroNonFinite) to their one-at-a-time
// definitions (sameRun16One; the others' inline): every 16-bit pattern, for fp16's and bf16's inf, at every
// position of 1–13 values among finite ones, and for sameRun16 a changed
// value at every position too.
func TestSixteenBitLanes(t *testing.T) {
	for _, inf := range []uint16{0x7C00, 0x7F80} {
		for n := 1; n <= 13; n++ {
			for pos := range n {
				for p := 0; p < 1<<16; p++ {
					if n > 5 && p%97 != 0 && uint16(p)&0x7FFF < inf-2 {
						continue // the finite patterns once per length up to 5; the rest sampled
					}
					b := make([]uint16, n)
					for i := range b {
						b[i] = uint16(0x3C00 + i) // finite in both formats
					}
					b[pos] = uint16(p)
					g := slices.Clone(b)
					for _, nf := range []bool{false, true} {
						j, c, f := sameRun16(g, b, inf, nf)
						wj, wc, wf := sameRun16One(g, b, inf, nf)
						if j != wj || c != wc || f != wf {
							t.Fatalf("verify inf=%#04x nonFinite=%v: sameRun16(%#04x at %d of %d) = %d, %d, %d, want %d, %d, %d", inf, nf, p, pos, n, j, c, f, wj, wc, wf)
						}
					}
					finite := uint16(p)&0x7FFF < inf
					r := make([]float64, n)
					for i := range r {
						r[i] = 1
					}
					zeroNonFinite(r, bits16(b), inf)
					for i, v := range r {
						want := 1.0
						if i == pos && !finite {
							want = 0
						}
						if v != want {
							t.Fatalf("verify inf=%#04x: zeroNonFinite(%#04x at %d of %d): r[%d] = %v, want %v", inf, p, pos, n, i, v, want)
						}
					}
					// A changed value at pos stops sameRun16 there.
					g[pos] ^= 1
					for _, nf := range []bool{false, true} {
						j, c, f := sameRun16(g, b, inf, nf)
						wj, wc, wf := sameRun16One(g, b, inf, nf)
						if j != wj || c != wc || f != wf {
							t.Fatalf("verify inf=%#04x nonFinite=%v: sameRun16(%#04x changed at %d of %d) = %d, %d, %d, want %d, %d, %d", inf, nf, p, pos, n, j, c, f, wj, wc, wf)
						}
					}
				}
			}
		}
	}
}

// TestSameRun16Sixteens holds sameRun16 to sameRun16One on runs long
// enough for its sixteen-at-a-time loop (sameRun16AVX2 where the CPU
// has AVX2): lengths around multiples of sixteen, with one value at
// every position either changed in got or set in both to a pattern at
// the edges of the non-finite range (and, seeded, random ones), among
// finite values or among NaN (a cache's unread tail).
func TestSameRun16Sixteens(t *testing.T) {
	const seed = 5
	r := rand.New(rand.NewPCG(seed, 16))
	for _, inf := range []uint16{0x7C00, 0x7F80} {
		patterns := []uint16{0, 0x8000, 1, inf - 1, inf, inf + 1, 0x7FFF, inf | 0x8000, (inf - 1) | 0x8000, 0xFFFF}
		for range 6 {
			patterns = append(patterns, uint16(r.Uint32()))
		}
		for _, n := range []int{15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100} {
			for _, fill := range []uint16{0x3C00, inf | 0x200} {
				for pos := range n {
					for _, p := range patterns {
						b := slices.Repeat([]uint16{fill}, n)
						for i := range b {
							if fill == 0x3C00 {
								b[i] += uint16(i) // finite in both formats
							}
						}
						b[pos] = p
						g := slices.Clone(b)
						for _, changed := range []bool{false, true} {
							if changed {
								g[pos] ^= 1
							}
							for _, nf := range []bool{false, true} {
								j, c, f := sameRun16(g, b, inf, nf)
								wj, wc, wf := sameRun16One(g, b, inf, nf)
								if j != wj || c != wc || f != wf {
									t.Fatalf("verify inf=%#04x nonFinite=%v seed=%d: sameRun16(%#04x at %d of %d among %#04x, changed=%v) = %d, %d, %d, want %d, %d, %d",
										inf, nf, seed, p, pos, n, fill, changed, j, c, f, wj, wc, wf)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestSumSquares4F16MatchesPortable holds sumSquares4F16AVX2 to its Go
// twin, every lane of the sums and the maxima bit for bit, on four chunks
// of random fp16 bit patterns (NaN, ±Inf, zeros, subnormals and the
// largest finite among them) of every length from 0 to 64 in steps of 4
// and a whole chunk.
func TestSumSquares4F16MatchesPortable(t *testing.T) {
	if !useF16C {
		t.Skip("no F16C: sumSquares4F16AVX2 does not run here")
	}
	const seed = 47
	r := rand.New(rand.NewPCG(seed, 0))
	special := []uint16{0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF}
	for n := 0; n <= sumChunk; n += 4 {
		if n > 64 {
			n = sumChunk
		}
		var bs [4][]float16.Float16
		for i := range bs {
			bs[i] = make([]float16.Float16, n)
			for j := range bs[i] {
				h := uint16(r.Uint32())
				if r.IntN(8) == 0 {
					h = special[r.IntN(len(special))]
				}
				bs[i][j] = float16.Frombits(h)
			}
		}
		var got, gotMax [4][4]float64
		if n > 0 {
			at := func(i int) *uint16 { return (*uint16)(unsafe.Pointer(&bs[i][0])) }
			sumSquares4F16AVX2(at(0), at(1), at(2), at(3), n, &got, &gotMax)
		}
		for i := range bs {
			var want, wantMax [4]float64
			sumSquaresF16Go(bs[i], &want, &wantMax)
			for k := range 4 {
				if math.Float64bits(got[i][k]) != math.Float64bits(want[k]) || math.Float64bits(gotMax[i][k]) != math.Float64bits(wantMax[k]) {
					t.Fatalf("verify sumSquares4F16AVX2 seed=%d n=%d: chunk %d lane %d: got sum %#x max %g / want sum %#x max %g",
						seed, n, i, k, math.Float64bits(got[i][k]), gotMax[i][k], math.Float64bits(want[k]), wantMax[k])
				}
			}
		}
	}
}

// TestSumsF16MatchesSums holds copiedChunks.sums on four fp16 chunks in
// one pass (sumsF16) to its three-pass form (widen, largest magnitude,
// scaled squares), every field of each chunk's sums bit for bit, on
// chunks of magnitudes from 2^-24 to 2^15 (subnormal chunks, a chunk of
// the largest finite values, zeros of both signs), finite or holding NaN
// and ±Inf.
func TestSumsF16MatchesSums(t *testing.T) {
	if !useF16C {
		t.Skip("no F16C: sumsF16 does not run here")
	}
	const seed = 48
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 12 {
		base := tensor.MustNew(tensor.Float16, 4*sumChunk)
		var chunks [4]copiedChunk
		var fast, slow [4]chunkSums
		for c := range 4 {
			exp := r.IntN(40) - 24 // the chunk's magnitude
			finite := r.IntN(2) == 0
			for j := range sumChunk {
				v := r.NormFloat64() * math.Ldexp(1, exp)
				switch k := r.IntN(200); {
				case k == 0:
					v = math.Copysign(0, r.NormFloat64())
				case k == 1:
					v = 65504
				case k == 2 && !finite:
					v = math.NaN()
				case k == 3 && !finite:
					v = math.Inf(1 - 2*r.IntN(2))
				}
				base.SetFloat64(c*sumChunk+j, v, tensor.Numerics{})
			}
			// What copiedOf says of the chunk (values past 65504 round
			// to Inf in any chunk).
			for j := range sumChunk {
				finite = finite && isFinite(base.Float64(c*sumChunk+j))
			}
			chunks[c] = copiedChunk{a: c * sumChunk, finite: finite}
		}
		cc := newCopiedChunks(base.Clone(), bound.NewUnchanged(base, tensor.Numerics{}))
		if cc == nil || cc.f16 == nil {
			t.Fatalf("verify sumsF16 seed=%d round %d: no fp16 copied-chunk taker", seed, round)
		}
		buf := make([]float64, 4*sumChunk)
		for i := range chunks {
			chunks[i].out = &fast[i]
		}
		cc.sums(chunks[:], buf)
		useF16C = false
		for i := range chunks {
			chunks[i].out = &slow[i]
		}
		cc.sums(chunks[:], buf)
		useF16C = true
		for i := range chunks {
			if g, w := fmt.Sprintf("%+v", fast[i]), fmt.Sprintf("%+v", slow[i]); g != w {
				t.Errorf("verify sumsF16 seed=%d round %d: chunk %d (finite %v): got %s / want (three passes) %s", seed, round, i, chunks[i].finite, g, w)
			}
		}
	}
}
