//go:build amd64 && !purego

package ops

import (
	"unsafe"

	"github.com/npuverify/npuverify/bound"
	"golang.org/x/sys/cpu"
)

// kvUseNT selects the non-temporal copies of kv_update_amd64.s; tests
// switch it off to run the portable path.
var kvUseNT = cpu.X86.HasAVX2

//go:noescape
func ntCopy64AVX(dst, src *float64, n int)

//go:noescape
func ntCopy8AVX(dst, src *byte, n int)

// kvStream64 copies src to dst (same length), the 32-byte aligned middle
// of dst with non-temporal stores.
func kvStream64(dst, src []float64) {
	src = src[:len(dst)]
	head := 0
	if a := uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 31; a != 0 {
		head = min(len(dst), int((32-a)/8))
	}
	n := (len(dst) - head) &^ 3
	if !kvUseNT || n == 0 {
		copy(dst, src)
		return
	}
	copy(dst[:head], src[:head])
	ntCopy64AVX(&dst[head], &src[head], n)
	copy(dst[head+n:], src[head+n:])
}

// kvStreamSpecial is kvStream64 for bound.Special (bytes).
func kvStreamSpecial(dst, src []bound.Special) {
	src = src[:len(dst)]
	head := 0
	if a := uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 31; a != 0 {
		head = min(len(dst), int(32-a))
	}
	n := (len(dst) - head) &^ 31
	if !kvUseNT || n == 0 {
		copy(dst, src)
		return
	}
	copy(dst[:head], src[:head])
	ntCopy8AVX((*byte)(unsafe.Pointer(&dst[head])), (*byte)(unsafe.Pointer(&src[head])), n)
	copy(dst[head+n:], src[head+n:])
}
