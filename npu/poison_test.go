package npu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// TestLazyPoisonMatchesEager holds the first-access Poison fill
// (Buffer.touch) to the fill at allocation it replaces: random kernels
// (copies in and out, aligned and padded, vector arithmetic with aliased
// operands, Duplicate, Cast, frees and reallocations, raw writes through
// the views) run with both, on one core whose memories earlier blocks
// have left dirty, and must leave the same bits in GM and in every
// buffer they look at.
func TestLazyPoisonMatchesEager(t *testing.T) {
	for seed := range uint64(300) {
		lazy := runPoisonKernel(t, seed, false)
		eager := runPoisonKernel(t, seed, true)
		for i := range eager {
			if !slices.Equal(lazy[i], eager[i]) {
				t.Fatalf("seed=%d block %d: lazy Poison saw different bits than eager Poison\ngot  %x\nwant %x", seed, i, lazy[i], eager[i])
			}
		}
	}
}

// runPoisonKernel runs the random kernel of seed on a fresh device, its
// 6 blocks serially on one core, and returns per block everything the
// kernel wrote to GM and read out of its buffers.
func runPoisonKernel(t *testing.T, seed uint64, eager bool) [][]byte {
	t.Helper()
	old := eagerPoison
	eagerPoison = eager
	defer func() { eagerPoison = old }()
	d := newDev(t, Ascend910B())
	const blocks = 6
	src := tensor.MustNew(tensor.Float16, 1<<12)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range src.F16() {
		src.F16()[i] = float16.Frombits(uint16(rng.Uint32()))
	}
	seen := make([][]byte, blocks)
	_, err := d.Launch(WithSerialLaunch(bg), blocks, func(c *Core) error {
		r := rand.New(rand.NewPCG(seed, uint64(c.BlockIdx)))
		var log []byte
		out := tensor.MustNew(tensor.Float16, 1<<12)
		var bufs []*Buffer
		alloc := func() error {
			b, err := c.AllocUB(1 + r.IntN(4096))
			if err == nil {
				bufs = append(bufs, b)
			}
			return err
		}
		for range 4 + r.IntN(4) {
			if err := alloc(); err != nil {
				return err
			}
		}
		pick := func() *Buffer { return bufs[r.IntN(len(bufs))] }
		elems := func(bs ...*Buffer) int { // a count the buffers hold, as fp16
			m := bs[0].Len()
			for _, b := range bs {
				m = min(m, b.Len())
			}
			return r.IntN(m/2 + 1)
		}
		for range 12 + r.IntN(12) {
			var err error
			switch op := r.IntN(10); op {
			case 0, 1:
				b := pick()
				n := elems(b)
				err = c.DataCopyPadIn(b, src, r.IntN(len(src.F16())-n+1), n)
			case 2:
				b := pick()
				n := elems(b) / 16 * 16
				err = c.DataCopyIn(b, src, 16*r.IntN((len(src.F16())-n)/16+1), n)
			case 3, 4:
				z, x, y := pick(), pick(), pick()
				err = [...]func(tensor.DType, *Buffer, *Buffer, *Buffer, int) error{c.Add, c.Sub, c.Mul}[r.IntN(3)](tensor.Float16, z, x, y, elems(z, x, y))
			case 5:
				b := pick()
				err = c.Duplicate(tensor.Float16, b, r.NormFloat64(), elems(b))
			case 6:
				z, x := pick(), pick()
				if z == x {
					continue
				}
				n := min(elems(x), z.Len()/4)
				err = c.Cast(tensor.Float32, tensor.Float16, z, x, n)
			case 7, 8:
				b := pick()
				n := elems(b)
				off := r.IntN(len(out.F16()) - n + 1)
				if err = c.DataCopyPadOut(out, off, b, n); err == nil {
					log = append(log, asBytes(out.F16()[off:off+n])...)
				}
			case 9:
				i := r.IntN(len(bufs))
				if err = c.Free(bufs[i]); err == nil {
					bufs = slices.Delete(bufs, i, i+1)
					err = alloc()
				}
			}
			if err != nil {
				return err
			}
		}
		b := pick()
		log = append(log, b.Bytes()...) // the whole buffer, written or not
		for _, b := range bufs {
			// Leave the memory dirty for the next block.
			for i := range b.Bytes()[:r.IntN(b.Len()+1)] {
				b.Bytes()[i] = byte(r.Uint32())
			}
		}
		seen[c.BlockIdx] = log
		return nil
	})
	if err != nil {
		t.Fatalf("seed=%d eager=%v: launch: %v", seed, eager, err)
	}
	return seen
}

// TestStaleViewLeavesLiveBuffersAlone: a view taken of a Buffer after its
// Free (a kernel bug the emulator cannot see, views being plain slices)
// must not write anything. Under the lazy Poison fill the stale Buffer's
// unaccessed bytes were never filled, and its exported views used to
// fill them at once, over the live buffer that now holds those bytes:
// the kernel's data turned into Poison, which the eager fill it replaces
// never did.
func TestStaleViewLeavesLiveBuffersAlone(t *testing.T) {
	const seed, n = 11, 256 // n fp16 elements, one buffer
	for _, eager := range []bool{true, false} {
		old := eagerPoison
		eagerPoison = eager
		d := newDev(t, Ascend910B())
		v := rand.New(rand.NewPCG(seed, 1)).NormFloat64()
		want := float16.Fromfloat32(float32(v))
		var got []float16.Float16
		_, err := d.Launch(WithSerialLaunch(bg), 1, func(c *Core) error {
			a, err := c.AllocUB(2 * n)
			if err != nil {
				return err
			}
			if err := c.Free(a); err != nil {
				return err
			}
			b, err := c.AllocUB(2 * n) // a's bytes
			if err != nil {
				return err
			}
			if err := c.Duplicate(tensor.Float16, b, v, n); err != nil {
				return err
			}
			_ = a.F16() // the bug: a view of a freed buffer
			got = slices.Clone(b.F16()[:n])
			return nil
		})
		eagerPoison = old
		if err != nil {
			t.Fatalf("Duplicate n=%d seed=%d eager=%v: launch: %v", n, seed, eager, err)
		}
		for i, g := range got {
			if g != want {
				t.Fatalf("Duplicate n=%d seed=%d eager=%v: element %d after a stale view: got %#04x / want %#04x (what Duplicate wrote)",
					n, seed, eager, i, g.Bits(), want.Bits())
			}
		}
	}
}
