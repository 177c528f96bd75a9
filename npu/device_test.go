package npu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

var bg = context.Background()

func newDev(t *testing.T, p Profile) *Device {
	t.Helper()
	d, err := NewDevice(p)
	if err != nil {
		t.Fatalf("NewDevice(%s): %v", p.Name, err)
	}
	return d
}

// unitProfile has round numbers: 1 GHz, 1 B/cycle of HBM per vector core,
// no DMA latency, 1 B per vector cycle, no issue overhead, no L2.
func unitProfile() Profile {
	p := noL2(Ascend910B())
	p.Name = "unit"
	p.ClockGHz = 1
	p.HBMGBps = float64(p.VectorCores)
	p.DMALatencyCycles = 0
	p.VectorBytesPerCycle = 1
	p.VectorIssueCycles = 0
	return p
}

// noL2 is p without its L2: every transfer at the core's share of HBM,
// the model the closed forms of the DMA tests state.
func noL2(p Profile) Profile {
	p.L2Bytes, p.L2BytesPerCycle, p.L2LatencyCycles = 0, 0, 0
	return p
}

func TestLaunchBlockDimRange(t *testing.T) {
	d := newDev(t, Ascend910B())
	nop := func(*Core) error { return nil }
	for _, c := range []struct {
		kind CoreKind
		dim  int
		ok   bool
	}{
		{VectorCore, -1, false}, {VectorCore, 0, false}, {VectorCore, 1, true}, {VectorCore, 48, true},
		{VectorCore, 49, false}, {AICore, 24, true}, {AICore, 25, false}, {CoreKind(7), 1, false},
	} {
		cost, err := d.LaunchOn(bg, c.kind, c.dim, nop)
		if (err == nil) != c.ok {
			t.Errorf("launch kind=%s blockDim=%d: got err %v want ok=%v", c.kind, c.dim, err, c.ok)
		}
		if err == nil && (cost.BlockDim != c.dim || len(cost.CoreCycles) != c.dim || cost.LoadBalance != 1) {
			t.Errorf("launch kind=%s blockDim=%d: got cost %+v want %d idle cores, balance 1", c.kind, c.dim, cost, c.dim)
		}
	}
	if _, err := d.Launch(bg, 1, nil); err == nil {
		t.Errorf("launch nil kernel: got nil error want an error")
	}
}

func TestLaunchRunsEveryBlock(t *testing.T) {
	d := newDev(t, Ascend910B())
	var seen [48]atomic.Int32
	_, err := d.Launch(bg, 48, func(c *Core) error {
		if c.BlockDim != 48 || c.Kind() != VectorCore || c.Profile().Name != "ascend910b" {
			return errors.New("bad core fields")
		}
		seen[c.BlockIdx].Add(1)
		return nil
	})
	if err != nil {
		t.Fatalf("launch blockDim=48: got %v want nil", err)
	}
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Errorf("launch blockDim=48: block %d: got %d runs want 1", i, n)
		}
	}
}

func TestLaunchPropagatesError(t *testing.T) {
	d := newDev(t, Ascend910B())
	boom := errors.New("boom")
	for range 20 { // the lowest failing block wins, whatever the scheduling
		cost, err := d.Launch(bg, 8, func(c *Core) error {
			if c.BlockIdx == 5 || c.BlockIdx == 3 {
				return boom
			}
			return nil
		})
		if cost != nil || !errors.Is(err, boom) || !strings.Contains(err.Error(), "block 3/8") {
			t.Fatalf("launch failing blocks 3,5: got %v, %v want block 3's error and nil cost", cost, err)
		}
	}
	_, err := d.Launch(bg, 2, func(c *Core) error {
		if c.BlockIdx == 1 {
			var s []int
			_ = s[c.BlockIdx] // index out of range
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "block 1/2") || !strings.Contains(err.Error(), "panic") {
		t.Errorf("launch panicking block: got %v want a block 1 panic error", err)
	}
}

func TestLaunchContext(t *testing.T) {
	d := newDev(t, Ascend910B())
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := d.Launch(ctx, 1, func(*Core) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("launch cancelled: got %v want context.Canceled", err)
	}
	ctx, cancel = context.WithCancel(bg)
	x := tensor.MustNew(tensor.Float32, 8)
	var dmaErr error
	_, err := d.Launch(ctx, 1, func(c *Core) error {
		cancel()
		b, err := c.AllocUB(32)
		if err != nil {
			return err
		}
		dmaErr = c.DataCopyIn(b, x, 0, 8)
		return dmaErr
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("launch cancelled mid-kernel: got %v want context.Canceled", err)
	}
	// The DMA itself stops, not only the launch after the kernel returns.
	if !errors.Is(dmaErr, context.Canceled) {
		t.Errorf("DataCopyIn after the launch's cancel: got %v want context.Canceled", dmaErr)
	}
}

func TestZeroCost(t *testing.T) {
	c := newDev(t, Ascend910B()).ZeroCost()
	want := &Cost{Device: "ascend910b", CoreCycles: []int64{}, LoadBalance: 1, Bound: BoundCores}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("ZeroCost: got %+v want %+v", c, want)
	}
}

// TestDMACost checks one transfer on ascend910b without L2 against the closed form
// 500 + ceil(B·48·1.8/1600) = 500 + ceil(B·54/1000), B the bytes of the
// 32-byte GM blocks the burst touches (500 bytes from offset 0: 16 blocks,
// 512 bytes), and one burst.
func TestDMACost(t *testing.T) {
	d := newDev(t, noL2(Ascend910B()))
	for _, bytes := range []int{32, 500, 1000, 32768, 65536, 196608} {
		x := tensor.MustNew(tensor.Int8, bytes)
		cost, err := d.Launch(bg, 1, func(c *Core) error {
			b, err := c.AllocUB(bytes)
			if err != nil {
				return err
			}
			return c.DataCopyPadIn(b, x, 0, bytes)
		})
		if err != nil {
			t.Fatalf("dma bytes=%d: %v", bytes, err)
		}
		want := int64(500 + (roundUp(bytes, 32)*54+999)/1000)
		cc := cost.Cores[0]
		if cost.Cycles != want || cc.DMACycles != want || cc.GMBytesIn != int64(bytes) || cost.GMBytesIn != int64(bytes) || cost.GMBursts != 1 {
			t.Errorf("dma bytes=%d: got cycles %d dma %d gm_in %d bursts %d want %d, %d, %d, 1", bytes, cost.Cycles, cc.DMACycles, cc.GMBytesIn, cost.GMBursts, want, want, bytes)
		}
		if math.Abs(cost.Seconds-float64(want)/1.8e9) > 1e-18 {
			t.Errorf("dma bytes=%d: got seconds %g want %g", bytes, cost.Seconds, float64(want)/1.8e9)
		}
		if cost.LoadBalance != 1 || cost.UBPeakBytes != int64(roundUp(bytes, 32)) {
			t.Errorf("dma bytes=%d: got balance %v ub peak %d want 1, %d", bytes, cost.LoadBalance, cost.UBPeakBytes, roundUp(bytes, 32))
		}
	}
}

// pipelineKernel runs tiles of: copy in x and y (n fp32 each), Add, copy
// out z, with bufN sets of buffers used in turn (ping-pong for 2). pre
// adds a copy before the first tile.
func pipelineKernel(bufN, tiles, n int, pre bool) Kernel {
	x := tensor.MustNew(tensor.Float32, n*tiles)
	z := tensor.MustNew(tensor.Float32, n*tiles)
	return func(c *Core) error {
		if err := c.SetBufferNum(bufN); err != nil {
			return err
		}
		var a, b, o [2]*Buffer
		for i := range bufN {
			a[i], _ = c.AllocUB(4 * n)
			b[i], _ = c.AllocUB(4 * n)
			o[i], _ = c.AllocUB(4 * n)
		}
		if pre {
			if err := c.DataCopyIn(a[0], x, 0, n); err != nil {
				return err
			}
		}
		for k := range tiles {
			c.BeginTile()
			a, b, o := a[k%bufN], b[k%bufN], o[k%bufN]
			if err := c.DataCopyIn(a, x, k*n, n); err != nil {
				return err
			}
			if err := c.DataCopyIn(b, x, k*n, n); err != nil {
				return err
			}
			if err := c.Add(tensor.Float32, o, a, b, n); err != nil {
				return err
			}
			if err := c.DataCopyOut(z, k*n, o, n); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestPipelineModel checks the implicit schedule against hand-derived
// timelines: each pipe in order, each instruction after the producers of
// what it reads and the readers of what it overwrites.
func TestPipelineModel(t *testing.T) {
	dmaBound := unitProfile() // copies of 32 B cost 32 cycles, the Add 32
	computeBound := unitProfile()
	computeBound.HBMGBps *= 32 // copies of 32 B cost 1 cycle
	for _, c := range []struct {
		name        string
		prof        Profile
		bufN, tiles int
		pre         bool
		cycles      int64
		overlap     float64
	}{
		// One buffer set: tile k+1's copy into a waits for tile k's Add
		// (it reads a): a [0,32] b [32,64] add [64,96] out [96,128], then
		// a [96,128] b [128,160] add [160,192] out [192,224], then
		// [192,224] [224,256] [256,288] [288,320]. The Adds never meet a
		// DMA.
		{"dma-bound serial", dmaBound, 1, 3, false, 320, 0},
		// Ping-pong: MTE2 streams [0,192]; adds [64,96] [128,160]
		// [192,224]; outs [96,128] [160,192] [224,256]. DMA busy 224,
		// compute 96, both 64.
		{"dma-bound double", dmaBound, 2, 3, false, 256, 64.0 / 96},
		{"one tile double", dmaBound, 2, 1, false, 128, 0},
		// Copies cost 1: a [0,1] b [1,2] add [2,34] out [34,35]; tile 1's
		// a waits for the add: [34,35] [35,36] add [36,68] out [68,69];
		// tile 2: [68,69] [69,70] add [70,102] out [102,103].
		{"compute-bound serial", computeBound, 1, 3, false, 103, 0},
		// Ping-pong: adds back to back [2,34] [34,66] [66,98], out2
		// [98,99]; DMA busy [0,4] [34,36] [66,67] [98,99] = 8 of which
		// 2+2+1 under an add.
		{"compute-bound double", computeBound, 2, 3, false, 99, 5.0 / 8},
	} {
		d := newDev(t, c.prof)
		cost, err := d.Launch(bg, 1, pipelineKernel(c.bufN, c.tiles, 8, c.pre))
		if err != nil {
			t.Fatalf("pipeline %s: %v", c.name, err)
		}
		if cost.Cycles != c.cycles || math.Abs(cost.Overlap-c.overlap) > 1e-12 {
			t.Errorf("pipeline %s: got cycles %d overlap %v want %d, %v", c.name, cost.Cycles, cost.Overlap, c.cycles, c.overlap)
		}
		if want := float64(cost.Cores[0].VectorCycles) / float64(cost.Cycles); cost.VectorUtil != want {
			t.Errorf("pipeline %s: got vector util %v want %v", c.name, cost.VectorUtil, want)
		}
	}
}

func TestSetBufferNum(t *testing.T) {
	d := newDev(t, Ascend910B())
	for _, n := range []int{0, 3} {
		if _, err := d.Launch(bg, 1, func(c *Core) error { return c.SetBufferNum(n) }); err == nil {
			t.Errorf("SetBufferNum(%d): got nil error want an error", n)
		}
	}
	_, err := d.Launch(bg, 1, func(c *Core) error { c.BeginTile(); return c.SetBufferNum(2) })
	if err == nil {
		t.Errorf("SetBufferNum after BeginTile: got nil error want an error")
	}
}

func TestLoadBalanceCost(t *testing.T) {
	d := newDev(t, unitProfile())
	x := tensor.MustNew(tensor.Float32, 16)
	cost, err := d.Launch(bg, 3, func(c *Core) error {
		b, err := c.AllocUB(64)
		if err != nil {
			return err
		}
		n := []int{16, 8, 8}[c.BlockIdx] // core 0 copies 64 B, the others 32 B
		return c.DataCopyIn(b, x, 0, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &Cost{
		Device: "unit", BlockDim: 3, Cycles: 64, Seconds: 64e-9, CoreCycles: []int64{64, 32, 32},
		GMBytesIn: 128, GMBursts: 3, UBPeakBytes: 64, LoadBalance: 0.5,
		UBLoadBytes: 128, // loaded, never read: UBReuse stays 0
		// No L2: HBM moves every block, 128 B at 48 B/cycle.
		HBMBytes: 128, HBMCycles: 3, Bound: BoundCores,
	}
	got := *cost
	got.Cores = nil
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("load balance: got %+v want %+v", &got, want)
	}
}

// TestLaunchBlockStartsFresh: Launch runs many blocks on few reused
// cores, so every block must start as if on a core of its own: no live
// buffers, zero peaks and counters, one buffer per queue, and its
// Cost.Cores entry only its own work; a buffer of any other block,
// finished or running, is refused.
func TestLaunchBlockStartsFresh(t *testing.T) {
	d := newDev(t, unitProfile())
	x := tensor.MustNew(tensor.Float32, 48*8)
	var prev atomic.Pointer[Buffer]
	cost, err := d.Launch(bg, 48, func(c *Core) error {
		for s := range numSpaces {
			if c.Used(s) != 0 || c.Peak(s) != 0 {
				return fmt.Errorf("block %d starts with %s used %d, peak %d", c.BlockIdx, s, c.Used(s), c.Peak(s))
			}
		}
		if cc := c.Counters(); cc != (CoreCost{}) {
			return fmt.Errorf("block %d starts with counters %+v", c.BlockIdx, cc)
		}
		if c.bufN != 1 || c.tiles != 0 {
			return fmt.Errorf("block %d starts with buffer num %d and %d tiles", c.BlockIdx, c.bufN, c.tiles)
		}
		if err := c.SetBufferNum(2); err != nil {
			return err
		}
		c.BeginTile()
		b, err := c.AllocUB(32 * (1 + c.BlockIdx%4))
		if err != nil {
			return err
		}
		if old := prev.Swap(b); old != nil {
			if err := c.Free(old); err == nil {
				return fmt.Errorf("block %d freed another block's buffer", c.BlockIdx)
			}
			if err := c.DataCopyIn(old, x, 0, 8); err == nil {
				return fmt.Errorf("block %d copied into another block's buffer", c.BlockIdx)
			}
		}
		return c.DataCopyIn(b, x, 8*c.BlockIdx, 8)
	})
	if err != nil {
		t.Fatalf("launch blockDim=48: got %v want nil", err)
	}
	for i, cc := range cost.Cores {
		want := CoreCost{Cycles: 32, DMACycles: 32, DMABusyCycles: 32, GMBytesIn: 32, GMBurstBytesIn: 32, GMBursts: 1, UBPeakBytes: int64(32 * (1 + i%4)), UBLoadBytes: 32}
		if cc != want {
			t.Errorf("launch blockDim=48: block %d: got %+v want %+v", i, cc, want)
		}
	}
}

// TestSerialLaunch holds WithSerialLaunch to its promise: every block
// runs once, in block order, and the launch's cost and first error are
// those of the default launch.
func TestSerialLaunch(t *testing.T) {
	d := newDev(t, Ascend910B())
	x := tensor.MustNew(tensor.Float32, 48*64)
	kernel := func(c *Core) error {
		b, err := c.AllocUB(32 * (1 + c.BlockIdx%5))
		if err != nil {
			return err
		}
		return c.DataCopyIn(b, x, 8*c.BlockIdx, 8*(1+c.BlockIdx%5))
	}
	want, err := d.Launch(bg, 48, kernel)
	if err != nil {
		t.Fatalf("launch blockDim=48: got %v want nil", err)
	}
	var order []int
	got, err := d.Launch(WithSerialLaunch(bg), 48, func(c *Core) error {
		order = append(order, c.BlockIdx) // no lock: one goroutine
		return kernel(c)
	})
	if err != nil {
		t.Fatalf("serial launch blockDim=48: got %v want nil", err)
	}
	for i, b := range order {
		if b != i {
			t.Fatalf("serial launch blockDim=48: block order %v, want 0..47", order)
		}
	}
	if len(order) != 48 || !reflect.DeepEqual(got, want) {
		t.Errorf("serial launch blockDim=48: got %d blocks, cost %+v want 48, cost %+v", len(order), got, want)
	}
	boom := errors.New("boom")
	_, err = d.Launch(WithSerialLaunch(bg), 8, func(c *Core) error {
		if c.BlockIdx == 5 || c.BlockIdx == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "block 3/8") {
		t.Errorf("serial launch failing blocks 3,5: got %v want block 3's error", err)
	}
}

// TestRecycledCoreBuffersStayDead: a launch's Cores are recycled for
// later launches (Device.cores), and a Buffer kept from an earlier launch
// must stay dead on them (not pass for a later allocation), every Buffer
// handed out being a new one.
func TestRecycledCoreBuffersStayDead(t *testing.T) {
	d := newDev(t, Ascend910B())
	x := tensor.MustNew(tensor.Float32, 64)
	seen := map[*Buffer]bool{}
	var old []*Buffer
	for launch := range 20 {
		var got []*Buffer
		_, err := d.Launch(WithSerialLaunch(bg), 3, func(c *Core) error {
			for _, b := range old {
				if err := c.DataCopyIn(b, x, 0, 8); err == nil {
					return fmt.Errorf("launch %d block %d: a Buffer of an earlier launch took a copy", launch, c.BlockIdx)
				}
				if err := c.Free(b); err == nil {
					return fmt.Errorf("launch %d block %d: a Buffer of an earlier launch was freed", launch, c.BlockIdx)
				}
			}
			for range 7 {
				b, err := c.AllocUB(32)
				if err != nil {
					return err
				}
				got = append(got, b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range got {
			if seen[b] {
				t.Fatalf("launch %d: a Buffer was handed out twice", launch)
			}
			seen[b] = true
		}
		old = got
	}
}
