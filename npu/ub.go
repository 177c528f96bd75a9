package npu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// Space names a core-local memory.
type Space uint8

// The local memories of a core. Vector primitives work on UB; GM↔UB and
// GM↔L1 copies are DMA; L0A/L0B/L0C feed and receive the cube.
const (
	UB Space = iota
	L1
	L0A
	L0B
	L0C
	numSpaces
)

var spaceNames = [...]string{UB: "UB", L1: "L1", L0A: "L0A", L0B: "L0B", L0C: "L0C"}

// String returns "UB", "L1", "L0A", "L0B" or "L0C".
func (s Space) String() string {
	if s < numSpaces {
		return spaceNames[s]
	}
	return fmt.Sprintf("space(%d)", uint8(s))
}

// Poison is the byte a fresh allocation is filled with. Real local memory
// holds whatever was there before; the emulator makes that deterministic
// and visible instead: 0xFF bytes are NaN in every float format (and -1 in
// int8), so a kernel that reads memory it never wrote gets a reproducible
// wrong answer rather than a silent zero.
const Poison byte = 0xFF

// Buffer is a region of one core's local memory, handed out by
// Core.Alloc / Core.AllocUB. Its length is the requested size rounded up
// to the space's alignment. A Buffer holds raw bytes; the typed views
// (F16, BF16, F32, I8, ...) alias the same bytes, like Ascend C's
// LocalTensor ReinterpretCast. A Buffer is valid until it is freed, its
// space is reset, or the kernel returns; views must not be kept longer.
type Buffer struct {
	// The fields are ordered, and poisoned is an int32 (Profile.Validate
	// caps a local memory at 1 GiB), so that a Buffer takes 48 bytes, not
	// 64: a launch of many small blocks allocates a few hundred of them.
	core  *Core
	data  []byte // len == allocated size; aliases the core's memory
	off   int
	space Space
	live  bool
	// poisoned is how many leading bytes hold what the kernel may see:
	// Poison, or what it wrote since. The rest still holds whatever an
	// earlier buffer left there and is Poison-filled (touch) before
	// anything can read it: every primitive checks the bytes it will
	// access (checkBuf, checkBufOp), and the exported views fill the
	// whole buffer. A kernel therefore sees exactly what it would if
	// every byte were filled at allocation, without paying to fill the
	// part of a tile-sized buffer that a short share never reaches.
	poisoned int32
	// wEnd and rEnd are when the implicit schedule's last write of the
	// buffer and its last read end (pipe.go).
	wEnd, rEnd int64
}

// touch makes the first n bytes of b what the kernel may see: those not
// yet accessed since the allocation are Poison-filled. n ≤ len(b.data).
// A dead buffer (freed or reset) is left alone: its bytes may be a live
// buffer's now, and a view of it (a kernel bug the views cannot catch)
// must not write over them, as the fill at allocation never did.
func (b *Buffer) touch(n int) {
	if p := int(b.poisoned); n > p && b.live {
		fill(b.data[p:n], Poison)
		b.poisoned = int32(n)
	}
}

// Space reports which memory the buffer lives in.
func (b *Buffer) Space() Space { return b.space }

// Len is the buffer's size in bytes (a multiple of the space's alignment).
func (b *Buffer) Len() int { return len(b.data) }

// Offset is the buffer's byte address within its space.
func (b *Buffer) Offset() int { return b.off }

// view prepares the whole buffer for a typed view and tells the core's
// schedule that the kernel's host code may read or write it (the next
// charge-only instruction's operands, pipe.go).
func (b *Buffer) view() {
	b.touch(len(b.data))
	if b.live && b.core != nil {
		b.core.noteView(b)
	}
}

// Bytes returns the buffer's bytes.
func (b *Buffer) Bytes() []byte { b.view(); return b.data }

// F16 views the buffer as fp16 values.
func (b *Buffer) F16() []float16.Float16 { b.view(); return b.f16() }

func (b *Buffer) f16() []float16.Float16 { return view[float16.Float16](b.data) }

// BF16 views the buffer as bf16 values.
func (b *Buffer) BF16() []tensor.BF16 { b.view(); return b.bf16() }

func (b *Buffer) bf16() []tensor.BF16 { return view[tensor.BF16](b.data) }

// F32 views the buffer as fp32 values.
func (b *Buffer) F32() []float32 { b.view(); return b.f32() }

func (b *Buffer) f32() []float32 { return view[float32](b.data) }

// I8 views the buffer as int8 values.
func (b *Buffer) I8() []int8 { b.view(); return b.i8() }

func (b *Buffer) i8() []int8 { return view[int8](b.data) }

// I32 views the buffer as int32 values.
func (b *Buffer) I32() []int32 { b.view(); return b.i32() }

func (b *Buffer) i32() []int32 { return view[int32](b.data) }

// U8 views the buffer as uint8 values.
func (b *Buffer) U8() []uint8 { b.view(); return b.data }

// view reinterprets bytes as a slice of T. The backing memory is allocated
// as []uint64 and every buffer offset is a multiple of the space's
// alignment (≥ 32), so the pointer is aligned for any T used here.
func view[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// arena is one local memory of one core: a first-fit allocator over a
// fixed capacity, with every allocation rounded up to the alignment.
type arena struct {
	space    Space
	capacity int
	align    int
	mem      []byte    // backing store, taken from the device pool on first use and grown by grow
	bufs     []*Buffer // live buffers sorted by offset
	used     int       // bytes in live buffers
	peak     int       // max of used over the launch
	// retired is when the last access of a freed buffer ends: a new
	// buffer, which may reuse its bytes, is written no earlier (implicit
	// schedule, pipe.go).
	retired int64
}

// alloc reserves size bytes (rounded up to the alignment), first fit.
func (a *arena) alloc(c *Core, size int) (*Buffer, error) {
	if size < 0 {
		return nil, fmt.Errorf("%s: alloc of %d bytes: size is negative", a.space, size)
	}
	if size > a.capacity {
		return nil, fmt.Errorf("%s: alloc of %d bytes exceeds the capacity of %d bytes", a.space, size, a.capacity)
	}
	rounded := roundUp(size, a.align)
	if a.used+rounded > a.capacity {
		return nil, fmt.Errorf("%s: alloc of %d bytes (%d after %d-byte alignment) exceeds the capacity: %d of %d bytes in use",
			a.space, size, rounded, a.align, a.used, a.capacity)
	}
	off, at := 0, len(a.bufs)
	for i, b := range a.bufs {
		if b.off-off >= rounded {
			at = i
			break
		}
		off = b.off + len(b.data)
	}
	if at == len(a.bufs) && a.capacity-off < rounded {
		return nil, fmt.Errorf("%s: alloc of %d bytes: no contiguous free range (%d of %d bytes in use, fragmented)",
			a.space, rounded, a.used, a.capacity)
	}
	if off+rounded > len(a.mem) {
		a.grow(c, off+rounded)
	}
	b := c.newBuffer()
	*b = Buffer{core: c, space: a.space, off: off, data: a.mem[off : off+rounded : off+rounded], live: true, rEnd: a.retired}
	if c.sch.san && (c.sch.mode == SyncExplicit || a.space == L0C) { // L0C: the accumulator initcheck (sanitizer_acc.go)
		c.shadowReset(b)
	}
	if eagerPoison {
		b.touch(rounded)
	}
	a.bufs = append(a.bufs, nil)
	copy(a.bufs[at+1:], a.bufs[at:])
	a.bufs[at] = b
	a.used += rounded
	a.peak = max(a.peak, a.used)
	return b, nil
}

// LazyMemBytes is the capacity above which a local memory's backing store
// is not taken whole on first use but grown with the allocations' high
// water mark: a profile may declare memories of up to 1 GiB (a
// what-if study), and a core allocating all of every memory it touches
// would cost each launch GiBs however small its buffers. Memories up to
// this size (every real device's) are taken whole, as before.
const LazyMemBytes = 4 << 20

// grow makes the backing store hold at least need bytes: the whole
// capacity for a memory of at most LazyMemBytes, else the larger of
// need, twice the present store and LazyMemBytes (so growing is rare),
// at most the capacity. The live buffers move to the new store with
// their bytes; the old store is left to the garbage collector, not the
// pool, as a dead buffer's stale view may still reach it.
func (a *arena) grow(c *Core, need int) {
	size := a.capacity
	if a.capacity > LazyMemBytes {
		size = min(a.capacity, roundUp(max(need, 2*len(a.mem), LazyMemBytes), 8))
	}
	mem := c.dev.getMem(a.space, size)
	if a.mem != nil {
		copy(mem, a.mem)
		for _, b := range a.bufs {
			b.data = mem[b.off : b.off+len(b.data) : b.off+len(b.data)]
		}
	}
	a.mem = mem
}

// bufferSlab is how many Buffers a core allocates at a time: a kernel
// allocates a few per block (vector_add six), and a launch of many small
// blocks (a fuzzer's) would otherwise make each a heap object of its own.
const bufferSlab = 32

// newBuffer returns a Buffer no one has held: the next of the core's
// slab, never one handed out before, so that a stale Buffer of an earlier
// block stays dead ("used after Free/Reset") rather than coming back to
// life as a later allocation.
func (c *Core) newBuffer() *Buffer { return fromSlab(&c.slab, bufferSlab) }

// fromSlab returns the next element of *slab, never handed out before,
// refilling it with n fresh ones when it is used up.
func fromSlab[T any](slab *[]T, n int) *T {
	if len(*slab) == 0 {
		*slab = make([]T, n)
	}
	e := &(*slab)[0]
	*slab = (*slab)[1:]
	return e
}

func (a *arena) free(b *Buffer) error {
	for i, x := range a.bufs {
		if x == b {
			a.bufs = append(a.bufs[:i], a.bufs[i+1:]...)
			a.used -= len(b.data)
			b.live = false
			a.retired = max(a.retired, b.wEnd, b.rEnd)
			return nil
		}
	}
	return fmt.Errorf("%s: free of a buffer at offset %d that is not allocated", a.space, b.off)
}

func (a *arena) reset() {
	for _, b := range a.bufs {
		b.live = false
		a.retired = max(a.retired, b.wEnd, b.rEnd)
	}
	a.bufs = a.bufs[:0]
	a.used = 0
}

// eagerPoison fills every buffer at allocation instead of on first
// access: the tests run kernels both ways and require the same bits.
var eagerPoison = false

// fill sets every byte of b to v: Poison by copies of a block of it
// (one memmove per 4 KiB; most UB buffers are a few KiB and are filled
// on every allocation), any other byte with doubling copies.
func fill(b []byte, v byte) {
	if v == Poison {
		for len(b) > 0 {
			b = b[copy(b, poisonBlock[:]):]
		}
		return
	}
	if len(b) == 0 {
		return
	}
	b[0] = v
	for k := 1; k < len(b); k *= 2 {
		copy(b[k:], b[:k])
	}
}

// poisonBlock is 4 KiB of Poison, the source fill copies from.
var poisonBlock = func() *[4096]byte {
	var p [4096]byte
	for i := range p {
		p[i] = Poison
	}
	return &p
}()

// fillPattern sets b to repeated copies of pat (len(b) a multiple of
// len(pat)) with doubling copies, like fill.
func fillPattern(b, pat []byte) {
	if len(b) == 0 {
		return
	}
	copy(b, pat)
	for k := len(pat); k < len(b); k *= 2 {
		copy(b[k:], b[:k])
	}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// memPool recycles local-memory backing stores across launches, one free
// list per space (the sizes are fixed by the profile). It is a bounded
// list rather than a sync.Pool, which the garbage collector empties: a
// stream of small launches (a fuzzer's) would then allocate and clear
// every core's memories again after each collection.
type memPool struct {
	mu    sync.Mutex
	free  [numSpaces][]*[]uint64
	bytes int // held in free
}

// memPoolBytes bounds what a device's free lists hold: the stores of a
// stream of small launches (a few cores' UB) stay, while a big launch
// (24 cores' L1, L0 and UB, some 24 MiB) does not keep its memories
// alive after it ends, which would only add to the peak of a run.
const memPoolBytes = 8 << 20

// Trim drops the memories the device keeps for later launches (up to
// memPoolBytes), so that a caller about to need its memory for something
// else (the harness, for the reference of a large case) gets it back at
// the next collection; the next launch allocates afresh.
func (d *Device) Trim() {
	p := &d.pool
	p.mu.Lock()
	p.free = [numSpaces][]*[]uint64{}
	p.bytes = 0
	p.mu.Unlock()
}

func (d *Device) getMem(s Space, size int) []byte {
	p := &d.pool
	p.mu.Lock()
	var w *[]uint64
	if n := len(p.free[s]); n > 0 {
		w = p.free[s][n-1]
		p.free[s] = p.free[s][:n-1]
		p.bytes -= len(*w) * 8
	}
	p.mu.Unlock()
	if w != nil && len(*w)*8 == size {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(*w))), size)
	}
	words := make([]uint64, (size+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), size)
}

func (d *Device) putMem(s Space, mem []byte) {
	if len(mem) == 0 || len(mem)%8 != 0 {
		return
	}
	words := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(mem))), len(mem)/8)
	p := &d.pool
	p.mu.Lock()
	if p.bytes+len(mem) <= memPoolBytes {
		p.free[s] = append(p.free[s], &words)
		p.bytes += len(mem)
	}
	p.mu.Unlock()
}

// checkBufOp is checkBuf for operand what of primitive op: the name
// "op: what" is built only for the error, not on every call of a
// primitive a kernel issues per tile.
func (c *Core) checkBufOp(op, what string, b *Buffer, s Space, n int) error {
	if b != nil && b.core == c && b.live && b.space == s && n <= len(b.data) {
		b.touch(n)
		return nil
	}
	return c.checkBuf(op+": "+what, b, s, n)
}

// checkBuf verifies that b is a live buffer of core c in space s holding
// at least n bytes; what names the operand in the error.
func (c *Core) checkBuf(what string, b *Buffer, s Space, n int) error {
	switch {
	case b == nil:
		return fmt.Errorf("%s is nil", what)
	case b.core != c:
		return fmt.Errorf("%s belongs to another core (block %d), not block %d", what, b.core.BlockIdx, c.BlockIdx)
	case !b.live:
		return fmt.Errorf("%s (%s offset %d) is used after Free/Reset", what, b.space, b.off)
	case b.space != s:
		return fmt.Errorf("%s is in %s, want %s", what, b.space, s)
	case n > len(b.data):
		return fmt.Errorf("%s holds %d bytes, the operation needs %d", what, len(b.data), n)
	}
	b.touch(max(n, 0))
	return nil
}
