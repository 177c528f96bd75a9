//go:build linux

package tensor

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back the whole 2 MiB pages inside b with
// huge pages before b is first touched: a tensor of many MiB read from a
// file then costs a few page faults rather than one per 4 KiB page.
// Advice only: an error changes nothing.
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < 2*huge {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((p+huge-1)&^(huge-1) - p)
	hi := int((p+uintptr(len(b)))&^(huge-1) - p)
	if hi > lo {
		_ = syscall.Madvise(b[lo:hi], 14) // MADV_HUGEPAGE
	}
}
