package npu

import "fmt"

// TQue is Ascend C's TQue: a ring of local buffers handed from a
// producer pipe to a consumer pipe, each hand-off carrying an event.
// AllocTensor (on the producer) waits until the consumer freed the slot,
// EnQue signals producer → consumer, DeQue waits for that signal on the
// consumer, FreeTensor signals consumer → producer. A VECIN queue is
// TQue(PipeMTE2, PipeV), a VECOUT queue TQue(PipeV, PipeMTE3).
//
// In SyncExplicit mode the hand-off is the only order between the two
// pipes that the sanitizer credits; in SyncImplicit mode it adds nothing
// the data flow does not already order. Protocol misuse that would hang
// the device (DeQue of an empty queue, AllocTensor with every slot
// taken) is a deadlock finding and an error.
type TQue struct {
	c        *Core
	src, dst Pipe
	n        int // buffers
	bufs     [MaxQueBuffers]*Buffer
	state    [MaxQueBuffers]queState
	freed    [MaxQueBuffers]event // per slot: the consumer's FreeTensor, when freedOK
	freedOK  [MaxQueBuffers]bool
	enq      [MaxQueBuffers]event // per slot: the producer's EnQue
	fifo     [MaxQueBuffers]int   // enqueued slots, oldest first, from head
	head     int
	queued   int
	next     int // the slot AllocTensor tries first (round robin)
	name     string
}

// MaxQueBuffers is the most buffers a TQue holds (Ascend C's BUFFER_NUM
// is 1 or 2 in practice).
const MaxQueBuffers = 4

// queSlab is how many TQues a core allocates at a time (newQue).
const queSlab = 8

// newQue returns a TQue no one has held, from the core's slab, so that a
// launch of many blocks allocates a few slabs, not a queue per block.
func (c *Core) newQue() *TQue { return fromSlab(&c.queSlab, queSlab) }

type queState uint8

const (
	slotFree queState = iota
	slotAlloc
	slotQueued
	slotDeq
)

// NewTQue allocates a queue of num UB buffers of bytes each from the
// producer pipe src to the consumer pipe dst; name labels it in findings.
func (c *Core) NewTQue(name string, src, dst Pipe, num, bytes int) (*TQue, error) {
	if src >= numPipes || dst >= numPipes || src == dst {
		return nil, fmt.Errorf("NewTQue %s: pipes %s → %s", name, src, dst)
	}
	if num < 1 || num > MaxQueBuffers {
		return nil, fmt.Errorf("NewTQue %s: %d buffers, want 1 to %d", name, num, MaxQueBuffers)
	}
	q := c.newQue()
	q.c, q.src, q.dst, q.name, q.n = c, src, dst, name, num
	for i := range num {
		b, err := c.AllocUB(bytes)
		if err != nil {
			return nil, fmt.Errorf("NewTQue %s: %w", name, err)
		}
		q.bufs[i] = b
	}
	return q, nil
}

// Buffers returns the queue's buffers, slot by slot.
func (q *TQue) Buffers() []*Buffer { return q.bufs[:q.n] }

func (q *TQue) slot(b *Buffer) int {
	for i, x := range q.bufs[:q.n] {
		if x == b {
			return i
		}
	}
	return -1
}

func (q *TQue) deadlock(msg string) error {
	c := q.c
	c.finding(Finding{Kind: KindDeadlock, Core: c.BlockIdx, Pipe: q.dst,
		Message: fmt.Sprintf("core %d queue %s (%s → %s): %s", c.BlockIdx, q.name, q.src, q.dst, msg)})
	return fmt.Errorf("queue %s: %s (deadlock on the device)", q.name, msg)
}

// AllocTensor returns the next free buffer of the queue for the producer
// to fill; the producer pipe waits until the consumer freed it.
func (q *TQue) AllocTensor() (*Buffer, error) {
	n := q.n
	for k := range n {
		i := (q.next + k) % n
		if q.state[i] != slotFree {
			continue
		}
		q.next = (i + 1) % n
		q.state[i] = slotAlloc
		if q.freedOK[i] {
			e := q.freed[i]
			e.dst = q.src
			q.c.wait(e)
		}
		return q.bufs[i], nil
	}
	return nil, q.deadlock(fmt.Sprintf("AllocTensor with all %d buffers taken (producer %s waits forever)", n, q.src))
}

// EnQue hands b (from AllocTensor) to the consumer: an event from the
// producer pipe, fired when its earlier instructions are done.
func (q *TQue) EnQue(b *Buffer) error {
	i := q.slot(b)
	if i < 0 || q.state[i] != slotAlloc {
		return fmt.Errorf("queue %s: EnQue of a buffer not from AllocTensor", q.name)
	}
	q.state[i] = slotQueued
	q.enq[i] = q.c.eventOf(q.src, q.dst, i)
	q.fifo[(q.head+q.queued)%MaxQueBuffers] = i
	q.queued++
	return nil
}

// DeQue returns the oldest enqueued buffer; the consumer pipe waits for
// its EnQue.
func (q *TQue) DeQue() (*Buffer, error) {
	if q.queued == 0 {
		return nil, q.deadlock(fmt.Sprintf("DeQue of an empty queue (consumer %s waits forever)", q.dst))
	}
	i := q.fifo[q.head]
	q.head = (q.head + 1) % MaxQueBuffers
	q.queued--
	q.state[i] = slotDeq
	q.c.wait(q.enq[i])
	return q.bufs[i], nil
}

// FreeTensor returns b (from DeQue) to the producer: an event from the
// consumer pipe, fired when its earlier instructions (the reads of b) are
// done.
func (q *TQue) FreeTensor(b *Buffer) error {
	i := q.slot(b)
	if i < 0 || q.state[i] != slotDeq {
		return fmt.Errorf("queue %s: FreeTensor of a buffer not from DeQue", q.name)
	}
	q.state[i] = slotFree
	q.freed[i] = q.c.eventOf(q.dst, q.src, i)
	q.freedOK[i] = true
	return nil
}
