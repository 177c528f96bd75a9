package npu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/tensor"
)

// Guard bands. A kernel's output lives in GM, where nothing stops a DMA
// from writing past its end: on the device a write one element too far
// silently lands in whatever the allocator put next. The emulator makes
// that visible the way gonum's testblas does: a GuardedOutput allocates
// the output in GM between two guard bands filled with a sentinel, the
// kernel writes through the ordinary DataCopy API into the whole
// allocation (so an out-of-range write lands in a guard instead of
// failing), and CheckGuards reports every guard element that no longer
// holds the sentinel. The output itself starts as Poison, like fresh local
// memory, so an element the kernel never writes is a NaN (−1 in int8), not
// a plausible zero.

// GuardBytes is the width of each guard band in bytes: two UB blocks, so
// the output's first element keeps the 32-byte alignment DataCopy needs.
const GuardBytes = 64

// guardSentinel returns the bit pattern of one guard element of dt: a
// NaN with a payload no arithmetic produces (hardware NaNs are canonical)
// for the float formats, 0x5A bytes for the integers.
func guardSentinel(dt tensor.DType) uint64 {
	switch dt {
	case tensor.Float64:
		return 0x7FFA5A5A5A5A5A5A
	case tensor.Float32, tensor.Int32:
		return 0x7FDA5A5A
	case tensor.Float16:
		return 0x7E5A
	case tensor.BFloat16:
		return 0x7FDA
	}
	return 0x5A
}

// GuardedOutput is one output tensor allocated in GM with a guard band
// before and after it.
type GuardedOutput struct {
	name  string
	shape []int
	n     int            // elements of the output
	guard int            // elements per guard band
	row   int            // guard is a multiple of row (the matrix row length, else 1)
	gm    *tensor.Tensor // flat: guard + n + guard elements
}

// NewGuardedOutput allocates output name of dtype dt and shape in GM,
// between two guard bands of GuardBytes each (narrower only when the
// allocation would exceed tensor.MaxElements). The output's elements are
// Poison until the kernel writes them.
func NewGuardedOutput(name string, dt tensor.DType, shape ...int) (*GuardedOutput, error) {
	n, err := tensor.NumElements(shape)
	if err != nil {
		return nil, fmt.Errorf("output %q: %w", name, err)
	}
	if !dt.Valid() {
		return nil, fmt.Errorf("output %q: invalid dtype %d", name, uint8(dt))
	}
	size := dt.Size()
	guard := GuardBytes / size
	if room := (tensor.MaxElements - n) / 2; room < guard {
		guard = room / (32 / size) * (32 / size) // whole 32-byte blocks keep the alignment
	}
	return newGuarded(name, dt, shape, n, guard, 1)
}

// GuardRows is the least height of the guard bands of NewGuardedMatrix:
// one cube fractal of rows, so that a block stored with its fractal
// padding rows lands in the guard.
const GuardRows = 16

// NewGuardedMatrix allocates the row-major [rows × cols] output name in
// GM between guard bands of whole rows (at least GuardRows rows and
// GuardBytes each, fewer only when the allocation would exceed
// tensor.MaxElements), so that 2-D copies address it with the row stride
// cols: output row r is GM row BaseRow()+r.
func NewGuardedMatrix(name string, dt tensor.DType, rows, cols int) (*GuardedOutput, error) {
	n, err := tensor.NumElements([]int{rows, cols})
	if err != nil {
		return nil, fmt.Errorf("output %q: %w", name, err)
	}
	if !dt.Valid() {
		return nil, fmt.Errorf("output %q: invalid dtype %d", name, uint8(dt))
	}
	g := 0
	if cols > 0 {
		g = max(GuardRows, (GuardBytes/dt.Size()+cols-1)/cols)
		g = min(g, (tensor.MaxElements-n)/2/cols)
	}
	return newGuarded(name, dt, []int{rows, cols}, n, g*cols, max(cols, 1))
}

// newGuarded allocates guard + n + guard elements, guard a multiple of row.
func newGuarded(name string, dt tensor.DType, shape []int, n, guard, row int) (*GuardedOutput, error) {
	size := dt.Size()
	gm, ok := guardedPool.Get().(*tensor.Tensor)
	if !ok || gm.DType != dt || gm.Len() != guard+n+guard {
		var err error
		if gm, err = tensor.New(dt, guard+n+guard); err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
	}
	// Every byte is set below (guards, then Poison), so a recycled
	// allocation holds nothing of its previous use.
	b, _ := gmBytes(gm)
	var pat [8]byte
	binary.LittleEndian.PutUint64(pat[:], guardSentinel(dt))
	fillPattern(b[:guard*size], pat[:size])
	fillPattern(b[(guard+n)*size:], pat[:size])
	fill(b[guard*size:(guard+n)*size], Poison)
	return &GuardedOutput{name: name, shape: append([]int(nil), shape...), n: n, guard: guard, row: row, gm: gm}, nil
}

// guardedPool recycles the GM allocations of released outputs.
var guardedPool sync.Pool // *tensor.Tensor, flat

// Release recycles the GM allocation for a later output; g, and every view
// of g.GM(), must not be used after. What Tensor returned stays valid (a
// view only of an allocation Release does not recycle).
func (g *GuardedOutput) Release() {
	if g.gm != nil && g.gm.Len() < unpooled {
		guardedPool.Put(g.gm)
	}
	g.gm = nil
}

// GM is the whole allocation, guards included, as a flat tensor. Kernels
// write the output's element i at GM element Base()+i.
func (g *GuardedOutput) GM() *tensor.Tensor { return g.gm }

// Base is the GM element offset of the output's first element.
func (g *GuardedOutput) Base() int { return g.guard }

// BaseRow is the GM row of the output's first row (NewGuardedMatrix; the
// row length is the output's column count).
func (g *GuardedOutput) BaseRow() int { return g.guard / g.row }

// Len is the number of output elements (guards excluded).
func (g *GuardedOutput) Len() int { return g.n }

// Tensor returns the output (guards excluded) in its shape: a copy, or
// for an allocation too large to be pooled, which Release never recycles,
// a view of the GM itself. Copying tens of MiB into fresh memory costs
// about what the kernel that wrote them costs (a fifth of a 2^24-element
// vector_add run), and holds the output twice.
func (g *GuardedOutput) Tensor() *tensor.Tensor {
	if g.gm.Len() >= unpooled {
		t := g.gm.Window(g.guard, g.n)
		t.Shape = append([]int(nil), g.shape...)
		return t
	}
	t := tensor.MustNew(g.gm.DType, g.shape...)
	src, size := gmBytes(g.gm)
	dst, _ := gmBytes(t)
	copy(dst, src[g.guard*size:(g.guard+g.n)*size])
	return t
}

// Check returns the violation of g's guards, or nil when both are intact.
func (g *GuardedOutput) Check() *GuardViolation {
	b, size := gmBytes(g.gm)
	var pat [8]byte
	binary.LittleEndian.PutUint64(pat[:], guardSentinel(g.gm.DType))
	if guardIntact(b[:g.guard*size], pat[:size]) && guardIntact(b[(g.guard+g.n)*size:], pat[:size]) {
		return nil
	}
	v := GuardViolation{Output: g.name, N: g.n, First: 0, Last: g.n - 1}
	touched := func(i int) { // i relative to the output's first element
		v.First, v.Last = min(v.First, i), max(v.Last, i)
		if i < 0 {
			v.Before++
		} else {
			v.After++
		}
	}
	for i := 0; i < g.guard; i++ {
		if string(b[i*size:(i+1)*size]) != string(pat[:size]) {
			touched(i - g.guard)
		}
		if j := g.guard + g.n + i; string(b[j*size:(j+1)*size]) != string(pat[:size]) {
			touched(g.n + i)
		}
	}
	if v.Before+v.After == 0 {
		return nil
	}
	return &v
}

// guardIntact reports whether the guard band b (a whole number of
// elements) holds nothing but copies of the element pattern pat: its
// first element is pat and every byte equals the one an element before
// it, two memory compares (the fast path of Check; the element-wise loop
// locates a violation).
func guardIntact(b, pat []byte) bool {
	if len(b) == 0 {
		return true
	}
	return bytes.Equal(b[:len(pat)], pat) && bytes.Equal(b[len(pat):], b[:len(b)-len(pat)])
}

// GuardViolation describes the touched guard elements of one output.
type GuardViolation struct {
	Output string // output name
	N      int    // output elements
	Before int    // guard elements touched before element 0
	After  int    // guard elements touched after element N−1
	// First is the lowest touched index before the output (negative; valid
	// when Before > 0), Last the highest past its end (≥ N; valid when
	// After > 0), both relative to the output's element 0.
	First, Last int
}

// String describes the violation, e.g. `output "z" (257 elements): 1
// element written past the end (index 257)`.
func (v GuardViolation) String() string {
	var parts []string
	if v.Before > 0 {
		parts = append(parts, fmt.Sprintf("%d element(s) written before the start (lowest index %d)", v.Before, v.First))
	}
	if v.After > 0 {
		parts = append(parts, fmt.Sprintf("%d element(s) written past the end (highest index %d)", v.After, v.Last))
	}
	return fmt.Sprintf("output %q (%d elements): guard band touched: %s", v.Output, v.N, strings.Join(parts, ", "))
}

// GuardError reports outputs whose guard bands a kernel wrote. A kernel
// returns it together with its outputs: they were produced, but the
// launch also wrote GM outside them.
type GuardError struct{ Violations []GuardViolation } // in output order

func (e *GuardError) Error() string {
	s := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		s[i] = v.String()
	}
	return strings.Join(s, "; ")
}

// CheckGuards checks the guards of outs and returns a *GuardError listing
// every violated one, or nil.
func CheckGuards(outs ...*GuardedOutput) error {
	var e GuardError
	for _, g := range outs {
		if v := g.Check(); v != nil {
			e.Violations = append(e.Violations, *v)
		}
	}
	if len(e.Violations) == 0 {
		return nil
	}
	return &e
}
