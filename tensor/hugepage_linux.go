//go:build linux

package tensor

import (
	"runtime"
	"sync/atomic"
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

// GrowHeapHuge grows the Go heap by about n bytes of memory advised to be
// backed by huge pages, for the allocations a process is about to make:
// it allocates n bytes (fresh from the system, so never touched), advises
// the whole 2 MiB pages inside them (adviseHuge) and drops them again,
// collecting once so that the heap takes the range back at once. The
// runtime hands out the lowest free addresses first, so the inputs,
// outputs and scratch made next land in that range, and each 2 MiB of it
// that they touch costs one page fault instead of 512. On a host where a
// fault is a trip to the hypervisor (the virtual machine of
// docs/performance.md) that was a fifth of a fresh `run` gemm 1024³'s CPU.
// The advice stays on the range for the life of the process; the kernel
// backs only what is touched, so n beyond what the process uses costs
// nothing but address space, while a huge page half used is resident
// whole: a caller sizes n to what it will fill (run: three times its
// inputs' bytes). Advice only: an error changes nothing.
//
// A call for no more bytes than an earlier one did does nothing: that
// range is the heap's already, and allocating it again would not be
// fresh memory but reused memory the runtime clears first (a process
// that runs many cases, as BenchmarkRunGEMM does, spent 56 ms a
// decoding-step run clearing 180 MB it did not need).
func GrowHeapHuge(n int) {
	const huge = 2 << 20
	if n < 2*huge || int64(n) <= heapGrown.Load() {
		return
	}
	b := make([]byte, n+huge) // n bytes of whole huge pages, however b is aligned
	adviseHuge(b)
	runtime.KeepAlive(b)
	runtime.GC()
	heapGrown.Store(int64(n))
}

// heapGrown is the largest n GrowHeapHuge has grown the heap by.
var heapGrown atomic.Int64
