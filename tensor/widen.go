package tensor

import (
	"math"
	"sync"
	"unsafe"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/x448/float16"
)

// The float64 view of a tensor: every element of every dtype read as the
// exact float64 of its value, one at a time or a run at a time (the
// verification path's way in), widened by the CPU's conversions where it
// has them (f16_amd64.go) and by the portable loops here elsewhere.

// Float64 returns element i as an exact float64.
func (t *Tensor) Float64(i int) float64 {
	switch s := t.data.(type) {
	case []float64:
		return s[i]
	case []float32:
		return float64(s[i])
	case []float16.Float16:
		return float64(s[i].Float32())
	case []BF16:
		return s[i].Float64()
	case []int8:
		return float64(s[i])
	case []int32:
		return float64(s[i])
	case []uint8:
		return float64(s[i])
	}
	panic("tensor: Float64 on a tensor without data")
}

// Float64s returns all elements as exact float64 values in a new slice.
func (t *Tensor) Float64s() []float64 {
	out := make([]float64, t.Len())
	t.Float64sFrom(0, out)
	return out
}

// Float64sFrom stores elements off, off+1, … off+len(dst)−1 into dst as
// exact float64 values (they must exist). It converts by dtype in typed
// loops (fp16 by a table of all 2^16 values), over all cores for large
// ranges: the verification path reads every tensor this way.
func (t *Tensor) Float64sFrom(off int, dst []float64) {
	switch s := t.data.(type) {
	case []float64:
		copy(dst, s[off:off+len(dst)])
	case []float32:
		widen(dst, s[off:off+len(dst)], f32ToF64)
	case []float16.Float16:
		widen(dst, s[off:off+len(dst)], f16ToF64)
	case []BF16:
		widen(dst, s[off:off+len(dst)], bf16ToF64)
	case []int8:
		for i, v := range s[off : off+len(dst)] {
			dst[i] = float64(v)
		}
	case []uint8:
		for i, v := range s[off : off+len(dst)] {
			dst[i] = float64(v)
		}
	default:
		for i := range dst {
			dst[i] = t.Float64(off + i)
		}
	}
}

// Float64sGrouped stores runs groups of group elements of t, from
// element off on, as float64 values: group r (elements off + r·group, …)
// at dst[r·stride:], the values of dst between groups untouched. It is
// Float64sFrom with a gap after every group, the layout of a row of
// dgemm's packed B, which it fills this way without a buffer and a copy,
// and reports whether it did: only fp16 in groups of eight where the CPU
// has F16C has this direct conversion, and for anything else (or groups
// that would overlap, a stride below the group) it stores nothing and
// returns false. Like Float64sFrom, it panics when the elements or dst's
// groups are out of range.
func (t *Tensor) Float64sGrouped(off, group, runs, stride int, dst []float64) bool {
	s, ok := t.data.([]float16.Float16)
	if !ok || !useF16C || group != 8 || runs <= 0 || stride < group {
		return false
	}
	src := s[off : off+runs*group]
	_ = dst[(runs-1)*stride+group-1]
	f16ToF64Grouped8(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), runs, stride) // float16.Float16 is a uint16
	return true
}

// AddFloat64sFrom sets dst[i] to the float64 sum of elements off+i of t
// and u, t's first (one IEEE addition of the exact widened values, as
// t.Float64sFrom into dst, u's into a buffer and dst[i] + buf[i] would
// give: of two NaNs the sum is t's), and reports whether it did: only
// fp16 tensors where the CPU has F16C, eight values a step, widening and
// adding in one pass where the three passes stored and loaded every value
// twice more (vector_add's reference). Otherwise it leaves dst alone and
// the caller widens and adds.
func (t *Tensor) AddFloat64sFrom(u *Tensor, off int, dst []float64) bool {
	a, okA := t.data.([]float16.Float16)
	b, okB := u.data.([]float16.Float16)
	if !okA || !okB || !useF16C {
		return false
	}
	a, b = a[off:off+len(dst)], b[off:off+len(dst)]
	n := len(dst) &^ 7
	if n > 0 {
		f16AddToF64F16C(&dst[0], (*uint16)(unsafe.Pointer(&a[0])), (*uint16)(unsafe.Pointer(&b[0])), n) // float16.Float16 is a uint16
	}
	for i := n; i < len(dst); i++ {
		dst[i] = float64(a[i].Float32()) + float64(b[i].Float32())
	}
	return true
}

// widen converts src into dst (as long as each other) by conv, over all
// cores in ranges of at least 2^16 elements; a shorter conversion runs on
// the caller's goroutine, with no closure to allocate.
func widen[S any](dst []float64, src []S, conv func([]float64, []S)) {
	const grain = 1 << 16
	if len(dst) < 2*grain {
		conv(dst, src)
		return
	}
	parallel.For(len(dst), grain, func(lo, hi int) { conv(dst[lo:hi], src[lo:hi]) })
}

// bf16ToF64Go converts src to float64 into dst (as long as src), one at
// a time: the portable form of bf16ToF64.
func bf16ToF64Go(dst []float64, src []BF16) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float64(math.Float32frombits(uint32(v) << 16))
	}
}

// widenF16Go converts src into dst (as long as src) by f16Table: the
// portable form of f16ToF64 and F16ToF32s. Narrowing the table's float64
// to fp32 is exact, NaNs included (their payloads fit fp32's).
func widenF16Go[D float32 | float64](dst []D, src []float16.Float16) {
	dst = dst[:len(src)]
	tab := f16Table()
	for i, v := range src {
		dst[i] = D(tab[v])
	}
}

// f32ToF64Go converts src to float64 into dst (as long as src), one at a
// time: the portable form of f32ToF64.
func f32ToF64Go(dst []float64, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float64(v)
	}
}

// f16Table holds every fp16 value as a float64, indexed by bit pattern.
var f16Table = sync.OnceValue(func() *[1 << 16]float64 {
	var tab [1 << 16]float64
	for b := range tab {
		tab[b] = float64(float16.Frombits(uint16(b)).Float32())
	}
	return &tab
})
