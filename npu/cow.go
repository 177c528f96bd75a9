package npu

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/npuverify/npuverify/tensor"
)

// CopyOnWrite makes a kernel's input tensors copy-on-write in GM, so
// that a kernel which writes into an input (an injected fault, or a bug)
// never changes the caller's tensor: the first DMA write into an input
// gives the launch a private copy of it, and every later DMA of that
// input, read or write, on any core, goes to the copy. A kernel that
// writes no input costs an atomic load per DMA read, where copying every
// input before the run costs their bytes in fresh memory (for a
// vector_add of 2^24 fp16 elements, 64 MiB and a seventh of the run).
//
// What it covers is what a kernel moves by DMA (DataCopy*, DataCopy2D*)
// and what host code writes into GM through HostWrite: host code that
// reads an input tensor directly (NewGMMatrix) reads the caller's, and
// host code that writes one without HostWrite writes the caller's, which
// the harness then reports as a backend that broke its promise to guard
// its inputs (backend.InputGuard). Several launches under one context share the copies, so a
// later launch reads what an earlier one wrote. It is safe for concurrent
// use by the cores of a launch.
type CopyOnWrite struct {
	in     map[string]*tensor.Tensor
	inputs []*tensor.Tensor // fixed at creation: read without mu
	mu     sync.Mutex
	copies map[*tensor.Tensor]*tensor.Tensor
	// copied is set, under mu, once copies holds a tensor: until then a
	// read resolves without taking mu (a DMA of a launch of small blocks,
	// such as a fuzzer's, costs a lock and a lookup otherwise).
	copied atomic.Bool
}

// NewCopyOnWrite guards the tensors of in, by name.
func NewCopyOnWrite(in map[string]*tensor.Tensor) *CopyOnWrite {
	w := &CopyOnWrite{in: in}
	for _, t := range in {
		if t != nil && !slices.Contains(w.inputs, t) {
			w.inputs = append(w.inputs, t)
		}
	}
	return w
}

type cowKey struct{}

// WithCopyOnWrite returns a context under which every launch's DMA treats
// w's tensors as copy-on-write.
func WithCopyOnWrite(ctx context.Context, w *CopyOnWrite) context.Context {
	return context.WithValue(ctx, cowKey{}, w)
}

// copyOnWriteFrom returns the guard on ctx, or nil.
func copyOnWriteFrom(ctx context.Context) *CopyOnWrite {
	w, _ := ctx.Value(cowKey{}).(*CopyOnWrite)
	return w
}

// HostWrite returns the tensor host code of a kernel writes when it
// writes t's GM outside a DMA (an injected fault that rewrites an input
// after the launch): t itself, or when t is a copy-on-write input under
// ctx, the launch's copy of it, made now if no DMA wrote t yet.
func HostWrite(ctx context.Context, t *tensor.Tensor) *tensor.Tensor {
	if w := copyOnWriteFrom(ctx); w != nil {
		return w.resolve(t, true)
	}
	return t
}

// resolve returns the tensor a DMA of t addresses: t itself when it is
// not guarded, or is and was never written; else the launch's copy, made
// now when this DMA is the first write.
func (w *CopyOnWrite) resolve(t *tensor.Tensor, write bool) *tensor.Tensor {
	if !write && !w.copied.Load() || !slices.Contains(w.inputs, t) {
		return t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.copies[t]; ok {
		return c
	}
	if !write {
		return t
	}
	if w.copies == nil {
		w.copies = map[*tensor.Tensor]*tensor.Tensor{}
	}
	c := t.Clone()
	w.copies[t] = c
	w.copied.Store(true)
	return c
}

// Written describes, by name, each input whose copy a kernel left
// different from the caller's tensor (the first element that differs).
// An input written over with its own values is not listed: what the
// caller would see is unchanged.
func (w *CopyOnWrite) Written() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out map[string]string
	for name, t := range w.in {
		c, ok := w.copies[t]
		if !ok {
			continue
		}
		if same, i := tensor.BitsEqual(t, c); !same {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = fmt.Sprintf("the kernel wrote into it (first difference at element %d: %v, was %v)", i, c.Float64(i), t.Float64(i))
		}
	}
	return out
}
