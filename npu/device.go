// Package npu is the emulated device: a device profile, cores that run
// kernel blocks, their local memories (Unified Buffer, L1, L0A/B/C), DMA
// between global memory (GM, held as tensors) and local memory, vector
// primitives, and the per-core counters from which a deterministic Cost
// is derived.
//
// Kernels are written the way Ascend C kernels are. A host-side tiling
// function decides the block count and tile sizes; Device.Launch runs the
// kernel once per block, each on a Core of its own, blocks running
// concurrently (on up to GOMAXPROCS goroutines; no block may wait for
// another, as none does on the device's independent cores). A block
// allocates local buffers (capacity enforced), copies GM→UB with
// DataCopyIn (32-byte alignment enforced; DataCopyPadIn for tails),
// computes with vector primitives, and copies UB→GM with DataCopyOut.
//
// # Cost model
//
// Nothing is timed; every primitive is an instruction on one of its
// core's pipes (pipe.go) with a fixed duration:
//
//   - DMA (GM↔local, pipes MTE2 in and MTE3 out): DMALatencyCycles +
//     ceil(burst_bytes / share) per transfer, where share = HBM bandwidth /
//     clock / cores of the kind, in bytes per cycle (1600/1.8/48 ≈ 18.5
//     B/cycle per vector core on ascend910b, so ceil(0.054·bytes)), and
//     burst_bytes are the whole GM blocks (ub_block_bytes) each of the
//     transfer's bursts touches: one burst for a contiguous copy, one per
//     row for a strided one (dmaBursts). GMBytesIn/Out count the bytes
//     read from or written to GM, not UB padding nor whole blocks.
//   - Vector (pipe V): VectorIssueCycles + ceil(bytes /
//     VectorBytesPerCycle) per instruction, bytes = elements · element
//     size.
//   - Cube (pipes MTE1, M, FIX): added by the cube primitives (cube.go).
//
// Pipes run concurrently, each in order, ordered among each other by the
// data flow (SyncImplicit) or by the kernel's events (SyncExplicit). A
// core's cycles are the end of its schedule; the launch's Cycles the
// maximum over cores. Overlap is read off the schedules: the cycles in
// which a DMA pipe (MTE2, MTE3) and a compute pipe (V, M) are both busy,
// over the smaller of the two busy times, summed over cores. The model
// uses only integer counters and one fixed division per transfer, so it
// is deterministic.
//
// The arithmetic is the host's floats, but not its NaNs: every NaN that
// emulated arithmetic produces is its format's default NaN (sign set,
// quiet, zero payload), whatever the host and the operands' payloads, so
// the emulator's output bits are the same on every host (nan.go). Copies
// keep a NaN's payload bit for bit.
package npu

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/npuverify/npuverify/internal/parallel"
)

// CoreKind selects which cores a launch runs on.
type CoreKind uint8

// Core kinds. Every emulated core has all local memories; the kind only
// sets the core count (blockDim limit) and the core's share of HBM.
const (
	VectorCore CoreKind = iota // AIV: Profile.VectorCores of them
	AICore                     // AIC (cube): Profile.AICores of them
)

// String returns "vector" or "ai".
func (k CoreKind) String() string {
	if k == AICore {
		return "ai"
	}
	return "vector"
}

// Device is an emulated NPU built from a Profile. It is safe for
// concurrent use; launches are independent.
type Device struct {
	prof    Profile
	dmaRate [2]float64 // bytes per cycle per core, by CoreKind (Profile.GMPath)
	dmaLat  int64      // cycles of a transfer's fixed latency (Profile.GMPath)
	pool    memPool
	// cores recycles the Cores of finished launches (without their
	// memories, which go back to pool): a stream of small launches then
	// reuses a Core's lists and Buffer slab instead of growing new ones.
	// A Buffer of an earlier launch stays dead on the recycled Core: it
	// was reset, and the slab never hands a Buffer out twice.
	cores sync.Pool // *Core
}

// NewDevice validates p and returns a device.
func NewDevice(p Profile) (*Device, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d := &Device{prof: p}
	var lat int
	d.dmaRate[VectorCore], lat = p.GMPath(VectorCore)
	d.dmaRate[AICore], _ = p.GMPath(AICore)
	d.dmaLat = int64(lat)
	return d, nil
}

// MustNewDevice is NewDevice for profiles known to be valid; it panics
// otherwise.
func MustNewDevice(p Profile) *Device {
	d, err := NewDevice(p)
	if err != nil {
		panic(err)
	}
	return d
}

// Profile returns a copy of the device profile.
func (d *Device) Profile() Profile { return d.prof }

// Kernel is the body of one block. It runs on c and returns an error to
// fail the launch.
type Kernel func(c *Core) error

// Launch runs kernel on blockDim vector cores (1 ≤ blockDim ≤
// VectorCores), concurrently on up to GOMAXPROCS goroutines, waits for
// all of them and derives the Cost. If any block fails, the error of the lowest-numbered
// failing block is returned (blocks are not cancelled by one another, so
// the choice is deterministic) together with a nil Cost. A kernel panic is
// recovered and reported as that block's error. Cancelling ctx makes the
// next DMA of every block fail.
func (d *Device) Launch(ctx context.Context, blockDim int, kernel Kernel) (*Cost, error) {
	return d.LaunchOn(ctx, VectorCore, blockDim, kernel)
}

// checkLaunch holds a launch's arguments to the profile: a core kind,
// 1 ≤ blockDim ≤ the profile's cores of that kind, a kernel.
func (d *Device) checkLaunch(kind CoreKind, blockDim int, kernel Kernel) error {
	if kind != VectorCore && kind != AICore {
		return fmt.Errorf("launch: invalid core kind %d", kind)
	}
	if n := d.prof.Cores(kind); blockDim < 1 || blockDim > n {
		return fmt.Errorf("launch: blockDim %d out of range [1, %d] (%s cores of %s)", blockDim, n, kind, d.prof.Name)
	}
	if kernel == nil {
		return fmt.Errorf("launch: nil kernel")
	}
	return nil
}

// LaunchOn is Launch on cores of the given kind (1 ≤ blockDim ≤ the
// profile's count of that kind).
func (d *Device) LaunchOn(ctx context.Context, kind CoreKind, blockDim int, kernel Kernel) (*Cost, error) {
	if err := d.checkLaunch(kind, blockDim, kernel); err != nil {
		return nil, err
	}
	workers := min(blockDim, runtime.GOMAXPROCS(0))
	if ctx.Value(serialKey{}) != nil {
		workers = 1
	}
	return d.launch(ctx, kind, blockDim, kernel, workers, false, nil)
}

// launch runs blockDim blocks of kernel on workers goroutines (each
// claiming the next block) and derives the Cost; done, when not nil, is
// told each block's end. Blocks that wait for one another (a cooperative
// launch's, at SyncAll: together) each get a goroutine of their own;
// independent ones run on parallel.Do's helpers, which start a launch
// without waking a parked thread per worker.
func (d *Device) launch(ctx context.Context, kind CoreKind, blockDim int, kernel Kernel, workers int, together bool, done func(int)) (*Cost, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	// Blocks are independent (none waits for another), so they run on
	// at most GOMAXPROCS workers, each claiming the next block index and
	// running it on a Core it reuses from block to block: a launch of 48
	// small blocks (a fuzzer's) then builds a few cores and goroutine
	// stacks instead of 48 of each, and a block starts on the memories
	// its worker's previous block used, still in cache.
	errs := make([]error, blockDim)
	costs := make([]CoreCost, blockDim)
	// What each block hands the sanitizer, and the blocks' traces (nil
	// when not tracing), by block.
	san := make([]blockSan, blockDim)
	spans := make([][]gmSpan, blockDim) // GM transfers for the L2 model (l2.go)
	var traces []*coreTrace
	if traceFrom(ctx) != nil {
		traces = make([]*coreTrace, blockDim)
	}
	var next atomic.Int64
	work := func() {
		c := d.newCore(ctx, kind, blockDim)
		defer c.releaseMem()
		for {
			i := int(next.Add(1) - 1)
			if i >= blockDim {
				return
			}
			c.begin(i)
			errs[i] = c.run(kernel)
			if done != nil {
				done(i)
			}
			costs[i] = c.finish()
			san[i] = c.sanResult()
			if len(c.l2log) > 0 {
				spans[i] = slices.Clone(c.l2log)
			}
			if traces != nil {
				traces[i] = c.sch.trace
			}
		}
	}
	if together {
		var wg sync.WaitGroup
		for range workers - 1 {
			wg.Go(work)
		}
		work()
		wg.Wait()
	} else {
		parallel.Do(workers, func(int) { work() })
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("block %d/%d: %w", i, blockDim, err)
		}
	}
	cost := d.deriveCost(costs)
	var readBurst, writeBurst int64
	for _, cc := range costs {
		readBurst += cc.GMBurstBytesIn
		writeBurst += cc.GMBurstBytesOut
	}
	d.applyHBM(cost, slices.Concat(spans...), readBurst, writeBurst)
	cost.Findings = launchFindings(san)
	if t := traceFrom(ctx); t != nil {
		t.addLaunch(traces, cost.Cycles, d.prof.ClockHz()/1e6)
	}
	return cost, nil
}

type serialKey struct{}

type costOnlyKey struct{}

// WithCostOnly returns a context under which launches price the cube's
// work without doing it: Mmad and MmadSparse charge their cycles and
// MACs but leave the accumulators as they are, and LoadL1 moves the
// bytes but decodes no view for the cube. Nothing the cost model counts
// depends on the values, so the Cost is the same as a full launch's
// (TestCostOnlyMatchesFull) and the outputs are garbage. It is for
// cost-model figures at shapes whose arithmetic would take the host
// seconds (a 4096³ gemm), never for a launch whose outputs are judged.
func WithCostOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, costOnlyKey{}, true)
}

// WithSerialLaunch returns a context under which Launch runs every block
// on the calling goroutine, in block order, instead of spreading them
// over GOMAXPROCS workers. The blocks compute the same (none waits for
// another, and each has its own core); what changes is only that no
// goroutine is started. It is for callers that already keep every host
// core busy with launches of their own, such as fuzzing workers (one
// process per core): there a launch's extra goroutine only adds a wakeup
// and a handoff to each exec.
func WithSerialLaunch(ctx context.Context) context.Context {
	return context.WithValue(ctx, serialKey{}, true)
}

// run runs kernel as the core's current block; a panic is the block's
// error.
func (c *Core) run(kernel Kernel) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kernel panic: %v", r)
		}
	}()
	return kernel(c)
}

// ZeroCost is the cost of launching nothing (a kernel with no work, e.g.
// on an empty input): no cores, zero cycles and bytes, LoadBalance 1.
func (d *Device) ZeroCost() *Cost {
	return &Cost{Device: d.prof.Name, CoreCycles: []int64{}, LoadBalance: 1, Bound: BoundCores}
}

// Core is one block of a launch running on one core: its index, the
// launch's block count, its local memories and its counters. A Core is
// used only by the goroutine running its block; Launch reuses it for a
// later block, whose buffers a stale one from before never passes for
// (it is dead: "used after Free/Reset").
type Core struct {
	BlockIdx int // this block, 0 ≤ BlockIdx < BlockDim
	BlockDim int // blocks in the launch

	ctx   context.Context
	done  <-chan struct{} // ctx.Done(): nil for a context that is never cancelled
	dev   *Device
	prof  *Profile
	kind  CoreKind
	mem   [numSpaces]arena
	cost  CoreCost
	bufN  int      // 1 or 2, see SetBufferNum
	tiles int      // BeginTile calls
	slab  []Buffer // Buffers not yet handed out (newBuffer)
	// queSlab are TQues not yet handed out (newQue).
	queSlab []TQue
	cow     *CopyOnWrite
	sch     sched
	// shadow is the sanitizer's record of each local memory (explicit
	// mode), shadowRows the granules of an operand's rows (shadowAccess),
	// scratch the span unions of finishSched; all are reused.
	shadow     [numSpaces]shadowMem
	shadowRows []span
	scratch    [2][]int64
	san        bool   // the launch sanitizes explicit-mode blocks
	trace      *Trace // the launch's trace, nil when not tracing
	// l2log are the block's GM transfers for the L2 model (l2.go), kept
	// only when the profile has an L2.
	l2log []gmSpan
	// costOnly: the launch prices the cube's work without computing it
	// (WithCostOnly).
	costOnly bool
}

// newCore returns a core for blocks of a launch of dim blocks on cores of
// kind; begin starts each block on it.
func (d *Device) newCore(ctx context.Context, kind CoreKind, dim int) *Core {
	c, ok := d.cores.Get().(*Core)
	if !ok {
		c = &Core{dev: d, prof: &d.prof}
		for s := range numSpaces {
			capacity, align := d.prof.spaceSize(s)
			c.mem[s] = arena{space: s, capacity: capacity, align: align}
		}
	}
	c.BlockDim, c.ctx, c.done, c.kind = dim, ctx, ctx.Done(), kind
	c.cow = copyOnWriteFrom(ctx)
	c.san, c.trace = sanitizerOn(ctx), traceFrom(ctx)
	c.costOnly = ctx.Value(costOnlyKey{}) != nil
	return c
}

// begin starts block idx on c with fresh counters and empty memories
// (the backing stores stay: every allocation is Poison-filled anyway).
func (c *Core) begin(idx int) {
	c.BlockIdx = idx
	c.cost = CoreCost{}
	c.bufN = 1
	c.tiles = 0
	c.l2log = c.l2log[:0]
	for s := range c.mem {
		c.mem[s].reset()
		c.mem[s].peak = 0
		c.mem[s].retired = 0
	}
	var tr *coreTrace
	if c.trace != nil {
		tr = c.trace.newCoreTrace(c.BlockDim)
	}
	c.sch.reset(c.san, tr)
}

// finish ends the current block: every buffer it holds becomes invalid
// (a stale one is "used after Free/Reset" in a later block on c) and its
// counters are frozen into the returned CoreCost.
func (c *Core) finish() CoreCost {
	c.cost.UBPeakBytes = int64(c.mem[UB].peak)
	c.finishSched()
	for s := range c.mem {
		c.mem[s].reset()
	}
	return c.cost
}

// releaseMem returns the core's memories to the device pool, and the core
// to the device's, once its worker has no more blocks to run.
func (c *Core) releaseMem() {
	for s := range c.mem {
		a := &c.mem[s]
		a.reset()
		a.peak = 0
		if a.mem != nil {
			c.dev.putMem(a.space, a.mem)
			a.mem = nil
		}
	}
	c.ctx, c.done, c.cow = nil, nil, nil
	c.dev.cores.Put(c)
}

// Profile returns a copy of the device profile.
func (c *Core) Profile() Profile { return *c.prof }

// Kind reports which kind of core this block runs on.
func (c *Core) Kind() CoreKind { return c.kind }

// Context returns the launch's context.
func (c *Core) Context() context.Context { return c.ctx }

// AllocUB allocates bytes of Unified Buffer, rounded up to the UB block
// (32 B). Exceeding the capacity is an error, never a silent overlap. The
// contents are Poison bytes until written.
func (c *Core) AllocUB(bytes int) (*Buffer, error) { return c.Alloc(UB, bytes) }

// Alloc allocates bytes of local memory s, rounded up to its alignment.
func (c *Core) Alloc(s Space, bytes int) (*Buffer, error) {
	if s >= numSpaces {
		return nil, fmt.Errorf("alloc: invalid space %d", s)
	}
	return c.mem[s].alloc(c, bytes)
}

// Free releases b; using it afterwards is an error.
func (c *Core) Free(b *Buffer) error {
	if b == nil || b.core != c {
		return fmt.Errorf("free: buffer is nil or belongs to another core")
	}
	if !b.live {
		return fmt.Errorf("free: %s buffer at offset %d already freed", b.space, b.off)
	}
	return c.mem[b.space].free(b)
}

// Reset frees every buffer of space s. The peak usage is kept.
func (c *Core) Reset(s Space) {
	if s < numSpaces {
		c.mem[s].reset()
	}
}

// ResetUB frees every UB buffer.
func (c *Core) ResetUB() { c.Reset(UB) }

// Used returns the bytes currently allocated in s (after rounding).
func (c *Core) Used(s Space) int { return c.mem[s].used }

// Peak returns the most bytes ever allocated at once in s.
func (c *Core) Peak(s Space) int { return c.mem[s].peak }

// SetBufferNum declares the kernel's buffers per queue, like Ascend C's
// BUFFER_NUM (1, the default, or 2). It is a declaration only: the
// schedule overlaps what the kernel's buffers and synchronisation allow
// (pipe.go), whatever the kernel declares. It must be called before the
// first BeginTile.
func (c *Core) SetBufferNum(n int) error {
	if n != 1 && n != 2 {
		return fmt.Errorf("SetBufferNum(%d): want 1 or 2", n)
	}
	if c.tiles > 0 {
		return fmt.Errorf("SetBufferNum(%d): called after the first BeginTile", n)
	}
	c.bufN = n
	return nil
}

// BeginTile marks the start of the kernel's next tile. The schedule
// needs no tiles (it follows the instructions); the mark is kept for the
// kernels' structure and for SetBufferNum's check.
func (c *Core) BeginTile() { c.tiles++ }

// Counters returns a snapshot of the core's counters. Cycles is the end
// of the schedule so far.
func (c *Core) Counters() CoreCost {
	cc := c.cost
	cc.UBPeakBytes = int64(c.mem[UB].peak)
	for _, f := range c.sch.free {
		cc.Cycles = max(cc.Cycles, f)
	}
	return cc
}

// deriveCost combines the finished cores' counters into a Cost.
func (d *Device) deriveCost(cores []CoreCost) *Cost {
	cost := d.ZeroCost()
	cost.BlockDim = len(cores)
	if len(cores) == 0 {
		return cost
	}
	cost.CoreCycles = make([]int64, len(cores))
	cost.Cores = cores
	// Balance is of the cycles a core works: a core that waits at SyncAll
	// for a slower one ends when it does, and counting the wait would make
	// every cooperative launch look balanced.
	minW, maxW := int64(math.MaxInt64), int64(0)
	var vec, hidden, overlappable, cube, l0Hidden, l0Overlappable float64
	for i, cc := range cores {
		cost.CoreCycles[i] = cc.Cycles
		cost.Cycles = max(cost.Cycles, cc.Cycles)
		w := cc.Cycles - cc.BarrierWaitCycles
		minW, maxW = min(minW, w), max(maxW, w)
		cost.GMBytesIn += cc.GMBytesIn
		cost.GMBytesOut += cc.GMBytesOut
		cost.GMBursts += cc.GMBursts
		cost.UBPeakBytes = max(cost.UBPeakBytes, cc.UBPeakBytes)
		cost.UBLoadBytes += cc.UBLoadBytes
		cost.UBReadBytes += cc.UBReadBytes
		cost.UBOutBytes += cc.UBOutBytes
		vec += float64(cc.VectorCycles)
		if cc.CubeMACs > 0 {
			cube += float64(cc.CubeCycles) * float64(cc.CubeUsefulMACs) / float64(cc.CubeMACs)
		}
		if m := min(cc.DMABusyCycles, cc.ComputeBusyCycles); m > 0 {
			overlappable += float64(m)
			hidden += float64(cc.OverlapCycles)
		}
		if m := min(cc.MTE1BusyCycles, cc.CubeBusyCycles); m > 0 {
			l0Overlappable += float64(m)
			l0Hidden += float64(cc.CubeLoadOverlapCycles)
		}
	}
	cost.Seconds = float64(cost.Cycles) / d.prof.ClockHz()
	if cost.Cycles > 0 {
		busy := float64(cost.Cycles) * float64(len(cores))
		cost.VectorUtil = vec / busy
		cost.CubeUtil = cube / busy
		cost.LoadBalance = float64(minW) / float64(max(maxW, 1))
	}
	if overlappable > 0 {
		cost.Overlap = min(1, hidden/overlappable)
	}
	if l0Overlappable > 0 {
		cost.CubeLoadOverlap = min(1, l0Hidden/l0Overlappable)
	}
	cost.UBReuse = UBReuse(cost.UBLoadBytes, cost.UBReadBytes)
	return cost
}
