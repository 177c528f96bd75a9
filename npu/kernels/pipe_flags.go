package kernels

import (
	"slices"

	"github.com/npuverify/npuverify/npu"
)

// Explicit synchronisation of ping-pong buffers, as sparse_compress and
// decode_attention write it (npu.SyncExplicit, held by the sanitizer).
// Every UB buffer has an event id; a consumer hands a buffer back to its
// next producer as soon as its last read is issued (a free event, set
// eagerly: pipeFlags.set), and the producer takes that event just before
// it overwrites the buffer (pipeFlags.take), so the copy in of tile k+1
// waits only for the reads of the tile that last used its buffer, not for
// everything issued before (the ping-pong pattern of sparse24_prune and
// transdata). A producer hands a filled buffer over with a set and a wait
// in a row (handOff).

// pipeFlags is a core's pending free events.
type pipeFlags struct {
	c    *npu.Core
	pend []pipeFlag
}

type pipeFlag struct {
	src, dst npu.Pipe
	id       int
}

// set signals that pipe src is done with buffer id, for pipe dst.
func (e *pipeFlags) set(src, dst npu.Pipe, id int) {
	e.c.SetFlag(src, dst, id)
	e.pend = append(e.pend, pipeFlag{src, dst, id})
}

// take makes pipe dst wait for the pending free events of buffer id from
// src, if there are any: a buffer's first use in a phase has none (the
// phase boundary ordered it), and a buffer src used several times since
// dst last wrote it has one for each use (a wait matches the oldest set,
// and dst must come after the latest).
func (e *pipeFlags) take(src, dst npu.Pipe, id int) {
	for {
		i := slices.Index(e.pend, pipeFlag{src, dst, id})
		if i < 0 {
			return
		}
		e.pend = slices.Delete(e.pend, i, i+1)
		e.c.WaitFlag(src, dst, id)
	}
}

// handOff orders pipe dst after what pipe src has issued (the fill of a
// buffer dst reads next).
func (e *pipeFlags) handOff(src, dst npu.Pipe, id int) {
	e.c.SetFlag(src, dst, id)
	e.c.WaitFlag(src, dst, id)
}

// phase takes every pending event and orders every pipe after every
// other: a buffer may change producer, and data stored to GM may be read
// back, after it.
func (e *pipeFlags) phase() {
	e.drain()
	e.c.PipeBarrier(npu.PipeAll)
}

// drain takes every pending event, so that none is left set when the
// kernel ends.
func (e *pipeFlags) drain() {
	for _, f := range e.pend {
		e.c.WaitFlag(f.src, f.dst, f.id)
	}
	e.pend = e.pend[:0]
}
