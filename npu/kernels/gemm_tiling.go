package kernels

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Tiling (host side) for gemm: GEMMTiling, chosen by GEMMTilingWith. The
// kernel that follows it is in gemm.go, its epilogue in gemm_epilogue.go.

// GEMMTiling is the host-side tiling of gemm.
type GEMMTiling struct {
	M, K, N int
	Mode    string
	In      tensor.DType
	Frac    npu.Fractal // cube fractal of the input dtype
	BaseM   int         `json:"base_m"` // L0C tile rows (multiple of Frac.M)
	BaseN   int         `json:"base_n"` // L0C tile columns (multiple of Frac.N)
	BaseK   int         `json:"base_k"` // k per Mmad (multiple of Frac.K, and of 16 for blocked16)
	StepK   int         `json:"step_k"` // baseK slices per L1 panel
	// GridM × GridN is the core layout: the output is cut into GridM row
	// bands and GridN column bands, as even as whole fractals allow, and
	// core i owns the region of band i/GridN and band i%GridN, which it
	// walks in BaseM × BaseN blocks (coreBlocks). Cores of one band row
	// read the same rows of A, cores of one band column the same columns
	// of B: they share them through L2.
	GridM      int  `json:"grid_m"`
	GridN      int  `json:"grid_n"`
	BlockDim   int  `json:"block_dim"`  // AI cores launched (≥ GridM·GridN, the rest idle); 0 for an empty output
	ChunkRows  int  `json:"chunk_rows"` // epilogue rows per UB chunk
	BufferNum  int  `json:"buffer_num"` // 2: L1 and L0 double-buffered
	L1Bytes    int  `json:"l1_bytes"`   // per core
	L0ABytes   int  `json:"l0a_bytes"`
	L0BBytes   int  `json:"l0b_bytes"`
	L0CBytes   int  `json:"l0c_bytes"`
	UBBytes    int  `json:"ub_bytes"`
	Blocked    bool `json:"blocked"`
	HasC       bool `json:"has_c"`
	Int8       bool `json:"int8"`
	OutDType   tensor.DType
	CDType     tensor.DType
	AccDType   tensor.DType
	EpiDType   tensor.DType
	Alpha      float64
	Beta       float64
	ScaleABcst bool // scale_a is [1]
	ScaleBBcst bool // scale_b is [1]
	ReverseK   bool `json:"reverse_k,omitempty"` // K panels and slices in descending order
	// Reuse is the operand a core keeps in L1 across its consecutive
	// output blocks that share it (Ascend C matmul's L1 reuse, stepN or
	// stepM > 1): ReuseA, the A row panel of blocks of one block row
	// (same m0, consecutive n0), or ReuseB, the B column panel of blocks
	// of one block column; "" none. ResidentPanels of that operand's
	// leading k-panels (all of K when it is ⌈K/depth⌉) are loaded by the
	// group's first block into L1 buffers of their own and read by the
	// rest of the group; its other panels stream through the ping-pong
	// slots as before.
	Reuse          string `json:"reuse,omitempty"`
	ResidentPanels int    `json:"resident_panels,omitempty"`
	OutNZ          bool   `json:"out_nz,omitempty"` // out (and c) in FRACTAL_NZ (gemm_layout.go)
}

// GEMMOptions overrides the tiling; zero fields take the default. Base
// sizes must be multiples of the fractal and fit the memories.
type GEMMOptions struct {
	BaseM, BaseN, BaseK, StepK int
	// BlockDim is used exactly: the core grid takes at most BlockDim
	// cores, and cores beyond it idle.
	BlockDim int
	// ReverseK accumulates the K panels and the baseK slices within them
	// in descending order: a valid kernel that sums in another order (the
	// bound holds for every order; the bits may differ from the default).
	ReverseK bool
	// BufferNum is the ping-pong depth of the L1 panels and the L0
	// slices, 1 or 2 (0: the default 2). A single-buffered kernel loads
	// the next panel only once MTE1 is done with the last and the next
	// slice only once the cube is done with the last: slower, the same
	// bits, and its events must satisfy the sanitizer as well.
	BufferNum int
	// Reuse chooses the operand kept in L1 across a core's blocks that
	// share it (GEMMTiling.Reuse): "" the tiling's choice (chooseReuse),
	// ReuseNone none, ReuseA or ReuseB that side, with as many of its
	// panels resident as L1 holds (none if not one). The numbers are the
	// same whichever it is: only the GM traffic and the cycles move.
	Reuse string
	// sparse24 prices the layout for gemm24 (NewGEMM24Tiling): A's panel
	// is half the k and carries a meta panel, and the cube runs half the
	// steps plus its index load.
	sparse24 bool
}

// The operands GEMMOptions.Reuse and GEMMTiling.Reuse name.
const (
	ReuseNone = "none" // GEMMOptions only: keep no panel across blocks
	ReuseA    = "a"    // A's row panels, across a block row
	ReuseB    = "b"    // B's column panels, across a block column
)

// depth is the k extent of one L1 panel.
func (t GEMMTiling) depth() int { return t.StepK * t.BaseK }

// panelK is the k extent the L1 panels are allocated for: depth, or all of
// K (padded) when that is less.
func (t GEMMTiling) panelK() int {
	kAlign := t.Frac.K
	if t.Blocked {
		kAlign = lcm(kAlign, ops.GEMMBlockK)
	}
	return min(t.depth(), roundUp(max(t.K, 1), kAlign))
}

// NewGEMMTiling computes the default tiling.
func NewGEMMTiling(prof npu.Profile, cfg ops.GEMMConfig, m, k, n int) (GEMMTiling, error) {
	return GEMMTilingWith(prof, cfg, m, k, n, GEMMOptions{})
}

// GEMMTilingWith computes the tiling of an M×K×N gemm on prof.
func GEMMTilingWith(prof npu.Profile, cfg ops.GEMMConfig, m, k, n int, opt GEMMOptions) (GEMMTiling, error) {
	if err := prof.ValidateFields(); err != nil {
		return GEMMTiling{}, err
	}
	if m < 0 || k < 0 || n < 0 {
		return GEMMTiling{}, fmt.Errorf("gemm: negative size %d×%d×%d", m, k, n)
	}
	switch opt.Reuse {
	case "", ReuseNone, ReuseA, ReuseB:
	default:
		return GEMMTiling{}, fmt.Errorf("gemm: Reuse %q is not one of %q, %q, %q", opt.Reuse, ReuseNone, ReuseA, ReuseB)
	}
	if opt.BufferNum < 0 || opt.BufferNum > 2 {
		return GEMMTiling{}, fmt.Errorf("gemm: BufferNum %d out of range [1, 2]", opt.BufferNum)
	}
	mode := cfg.Mode
	t := GEMMTiling{
		M: m, K: k, N: n, Mode: mode.Name, In: mode.In, Frac: prof.CubeFractal(mode.In),
		BufferNum: 2, Blocked: cfg.Accumulate == ops.GEMMBlocked16, HasC: cfg.Beta != 0,
		Int8: mode.Int8(), OutDType: mode.Out, CDType: mode.Out, AccDType: mode.Acc, EpiDType: mode.Epilogue,
		Alpha: cfg.Alpha, Beta: cfg.Beta, ReverseK: opt.ReverseK,
	}
	if opt.BufferNum > 0 {
		t.BufferNum = opt.BufferNum
	}
	size := mode.In.Size()
	fr := t.Frac
	kAlign := fr.K
	if t.Blocked {
		kAlign = lcm(kAlign, ops.GEMMBlockK)
	}
	pm, pn, pk := roundUp(max(m, 1), fr.M), roundUp(max(n, 1), fr.N), roundUp(max(k, 1), kAlign)
	// kFor is the largest baseK that fits L0A and L0B double-buffered, at
	// most 128 bytes of k per row (Ascend's usual 64 for fp16): a larger
	// baseK only makes fewer, bigger Mmads of the same modeled cost.
	kFor := func(bm, bn int) int {
		kb := min(prof.L0ABytes/(t.BufferNum*bm*size), prof.L0BBytes/(t.BufferNum*bn*size), max(128/size, kAlign))
		return min(roundDown(kb, kAlign), pk)
	}
	cores := prof.AICores
	if opt.BlockDim > 0 {
		if opt.BlockDim > prof.AICores {
			return GEMMTiling{}, fmt.Errorf("gemm: BlockDim %d exceeds the %d AI cores", opt.BlockDim, prof.AICores)
		}
		cores = opt.BlockDim
	}
	lay := chooseLayout(prof, t, m, k, n, pm, pn, pk, cores, opt, kFor)
	baseM, baseN := opt.BaseM, opt.BaseN
	if baseM == 0 {
		baseM = lay.bm
	}
	if baseN == 0 {
		baseN = lay.bn
	}
	baseK := opt.BaseK
	if baseK == 0 {
		baseK = max(kFor(baseM, baseN), kAlign)
	}
	switch {
	case baseM%fr.M != 0:
		return GEMMTiling{}, fmt.Errorf("gemm: BaseM %d is not a multiple of the fractal's %d", baseM, fr.M)
	case baseN%fr.N != 0:
		return GEMMTiling{}, fmt.Errorf("gemm: BaseN %d is not a multiple of the fractal's %d", baseN, fr.N)
	case baseK%kAlign != 0:
		return GEMMTiling{}, fmt.Errorf("gemm: BaseK %d is not a multiple of %d (fractal k, and 16 for blocked16)", baseK, kAlign)
	}
	t.BaseM, t.BaseN, t.BaseK = baseM, baseN, baseK
	t.L0ABytes = t.BufferNum * baseM * baseK * size
	t.L0BBytes = t.BufferNum * baseK * baseN * size
	t.L0CBytes = baseM * baseN * 4
	for _, l0 := range []struct {
		space      npu.Space
		need, have int
	}{{npu.L0A, t.L0ABytes, prof.L0ABytes}, {npu.L0B, t.L0BBytes, prof.L0BBytes}, {npu.L0C, t.L0CBytes, prof.L0CBytes}} {
		if l0.need > l0.have {
			return GEMMTiling{}, fmt.Errorf("gemm: base blocks %d×%d×%d need %d bytes of %s; the device has %d",
				baseM, baseN, baseK, l0.need, l0.space, l0.have)
		}
	}
	// L1: double-buffered A [baseM × depth] (gemm24: [baseM × depth/2])
	// and B [depth × baseN] panels.
	blocks := 1
	if m > 0 && n > 0 {
		// Band 0 of each side is a largest: core 0 runs the most blocks.
		_, rows := band(m, fr.M, lay.gm, 0)
		_, cols := band(n, fr.N, lay.gn, 0)
		blocks = ceilDiv(rows, baseM) * ceilDiv(cols, baseN)
	}
	step, maxStep := stepFor(prof, t, baseM, baseN, baseK, pk, blocks, opt.sparse24)
	if maxStep < 1 {
		return GEMMTiling{}, fmt.Errorf("gemm: L1 of %d bytes cannot hold two %d×%d and %d×%d panels", prof.L1Bytes, baseM, baseK, baseK, baseN)
	}
	t.StepK = step
	if opt.StepK > 0 {
		if opt.StepK > maxStep {
			return GEMMTiling{}, fmt.Errorf("gemm: StepK %d: L1 holds at most %d", opt.StepK, maxStep)
		}
		t.StepK = opt.StepK
	}
	t.L1Bytes = t.BufferNum * l1PerK(baseM, baseN, opt.sparse24) * min(t.depth(), pk) * size / 2
	if m > 0 && n > 0 {
		t.GridM, t.GridN = lay.gm, lay.gn
		t.BlockDim = t.GridM * t.GridN
		if opt.BlockDim > 0 {
			t.BlockDim = opt.BlockDim
		}
		if !opt.sparse24 && k > 0 {
			// The depth may give way to a resident side only where it
			// does not hide the panels' transfers anyway (stepFor's
			// fallback) and was not fixed by the caller.
			shrink := opt.StepK == 0 && !panelHidden(prof, t, baseM, baseN, baseK, pk, t.StepK)
			t.chooseReuse(prof, opt.Reuse, shrink)
		}
	}
	if err := t.fitEpilogue(prof, 0); err != nil {
		return GEMMTiling{}, err
	}
	return t, nil
}

// fitEpilogue sets ChunkRows and UBBytes: the epilogue's UB chunk takes
// as many rows of the output block as fit in the UB left after reserved
// bytes (a kernel's other UB buffers, such as gemm24's meta), at most
// BaseM. UB per epilogue row: fp32 accumulators, the output row, the C
// row; plus the int8 scales once.
func (t *GEMMTiling) fitEpilogue(prof npu.Profile, reserved int) error {
	align := prof.UBAlign()
	rowBytes := t.BaseN*4 + t.BaseN*t.OutDType.Size()
	if t.HasC {
		rowBytes += t.BaseN * t.OutDType.Size()
	}
	fixed := 0
	if t.Int8 {
		fixed = roundUp(t.BaseM*4, align) + roundUp(t.BaseN*4, align)
	}
	t.ChunkRows = min(t.BaseM, (prof.UBBytes-reserved-fixed-3*align)/rowBytes)
	if t.ChunkRows < 1 {
		return fmt.Errorf("gemm: UB of %d bytes cannot hold one epilogue row of %d columns beside %d bytes of other buffers (ub_bytes)", prof.UBBytes, t.BaseN, reserved)
	}
	t.UBBytes = fixed + roundUp(t.ChunkRows*t.BaseN*4, align) + roundUp(t.ChunkRows*t.BaseN*t.OutDType.Size(), align)
	if t.HasC {
		t.UBBytes += roundUp(t.ChunkRows*t.BaseN*t.OutDType.Size(), align)
	}
	return nil
}

// l1PerK is twice the elements of L1 one k of an A and a B panel take:
// baseM + baseN, or for gemm24 (A compressed to half its k) baseM/2 +
// baseN, doubled to stay whole.
func l1PerK(bm, bn int, sparse bool) int {
	if sparse {
		return bm + 2*bn
	}
	return 2 * (bm + bn)
}

// stepFor is the number of baseK slices per L1 panel for a core running
// blocks output blocks, and the most that fit L1 with the panels
// double-buffered (maxStep). A panel's transfers pay a fixed latency each
// (two, or three with gemm24's meta), so the panel is made just deep
// enough that its transfers take no longer than the cube's work on it,
// and so hide behind it; a deeper one would only lengthen the wait for
// the first panel, which nothing hides. Where no depth hides them (a
// block too small for its traffic), the depth is the one that minimises
// the latency the core pays, blocks·⌈K/depth⌉·transfers·latency, plus
// the first panel's load, depth·bytes per k / rate: √(blocks·K·
// transfers·latency·rate / bytes per k). It is never deeper than L1
// allows or K needs.
func stepFor(prof npu.Profile, t GEMMTiling, bm, bn, kb, pk, blocks int, sparse bool) (step, maxStep int) {
	size := t.In.Size()
	maxStep = 2 * prof.L1Bytes / (2 * l1PerK(bm, bn, sparse) * kb * size)
	limit := max(1, min(maxStep, ceilDiv(pk, kb)))
	rate, lat := prof.GMPath(npu.AICore)
	cube, bytes, xfers := panelRates(t, bm, bn, kb, sparse)
	// xfers·lat + step·bytes/rate ≤ step·cube: the least such step.
	if spare := cube - bytes/rate; spare > 0 {
		if s := max(1, int(math.Ceil(xfers*float64(lat)/spare-1e-9))); s <= limit {
			return s, maxStep
		}
	}
	depth := math.Sqrt(float64(max(blocks, 1)) * float64(pk) * xfers * float64(lat) * rate / (bytes / float64(kb)))
	step = max(1, min(limit, int(math.Round(depth/float64(kb)))))
	return step, maxStep
}

// panelHidden reports whether a dense gemm panel of step slices hides
// its transfers behind the cube's work on it (stepFor's criterion), or
// covers all of K (pk) so that there is no next panel to hide.
func panelHidden(prof npu.Profile, t GEMMTiling, bm, bn, kb, pk, step int) bool {
	if step*kb >= pk {
		return true
	}
	rate, lat := prof.GMPath(npu.AICore)
	cube, bytes, xfers := panelRates(t, bm, bn, kb, false)
	return float64(xfers*float64(lat))+float64(float64(step)*bytes/rate) <= float64(step)*cube*(1+1e-9)
}

// panelRates are a baseK slice's cube cycles and its operands' GM bytes
// (gemm24: with the meta), and the transfers a panel pays latency for.
func panelRates(t GEMMTiling, bm, bn, kb int, sparse bool) (cube, bytes, xfers float64) {
	size := t.In.Size()
	fr := t.Frac
	steps := (bm / fr.M) * (kb / fr.K) * (bn / fr.N) // per slice
	if t.In == tensor.Float32 {
		steps *= 2
	}
	cube = float64(steps)
	xfers = 2.0
	if sparse {
		cube = float64(cube/2) + float64(float64(bm*kb/2)/npu.L0LoadBytesPerCycle)
		xfers = 3
	}
	perSlice := l1PerK(bm, bn, sparse) * kb * size / 2
	if sparse {
		perSlice += bm * kb / 4 // meta
	}
	return cube, float64(perSlice), xfers
}

// gemmBlock is one output block of a core: rows [m0, m0+mr) and
// columns [n0, n0+nr).
type gemmBlock struct{ m0, n0, mr, nr int }

// band returns band i of n elements cut into parts bands of whole
// fractals of f, as even as they allow (the first n/f mod parts bands
// take one fractal more): its start and length.
func band(n, f, parts, i int) (start, length int) {
	frs := ceilDiv(n, f)
	q, r := frs/parts, frs%parts
	lo := i*q + min(i, r)
	hi := lo + q
	if i < r {
		hi++
	}
	return min(lo*f, n), min(hi*f, n) - min(lo*f, n)
}

// coreBlocks returns core i's output blocks in the order it runs them:
// its region (GridM × GridN layout) in BaseM × BaseN blocks, a row of
// blocks at a time, so that the cores of one band row read the same A
// rows at about the same time. A core outside the grid has none.
func (t GEMMTiling) coreBlocks(i int) []gemmBlock {
	if t.GridM == 0 || t.GridN == 0 || i >= t.GridM*t.GridN {
		return nil
	}
	r0, rn := band(t.M, t.Frac.M, t.GridM, i/t.GridN)
	c0, cn := band(t.N, t.Frac.N, t.GridN, i%t.GridN)
	var out []gemmBlock
	if t.Reuse == ReuseB {
		// A column of blocks at a time: the blocks of one column share
		// B's panels, which stay in L1 across them.
		for n0 := c0; n0 < c0+cn; n0 += t.BaseN {
			for m0 := r0; m0 < r0+rn; m0 += t.BaseM {
				out = append(out, gemmBlock{m0, n0, min(t.BaseM, r0+rn-m0), min(t.BaseN, c0+cn-n0)})
			}
		}
		return out
	}
	for m0 := r0; m0 < r0+rn; m0 += t.BaseM {
		for n0 := c0; n0 < c0+cn; n0 += t.BaseN {
			out = append(out, gemmBlock{m0, n0, min(t.BaseM, r0+rn-m0), min(t.BaseN, c0+cn-n0)})
		}
	}
	return out
}

// kAlign is the k granularity of the L1 panels: the fractal's k, and a
// multiple of ops.GEMMBlockK for blocked16.
func (t GEMMTiling) kAlign() int {
	if t.Blocked {
		return lcm(t.Frac.K, ops.GEMMBlockK)
	}
	return t.Frac.K
}

// panels is the number of k-panels of one output block.
func (t GEMMTiling) panels() int { return max(1, ceilDiv(t.K, t.depth())) }

// panelKC is the k extent panel pi (in K order) is loaded with: its real
// k, padded to kAlign.
func (t GEMMTiling) panelKC(pi int) int {
	return roundUp(max(0, min(t.depth(), t.K-pi*t.depth())), t.kAlign())
}

// MaxCoreBlocks is the most output blocks one core runs: a core with
// several shows the faults of a block loop (second-tile-misplaced).
func (t GEMMTiling) MaxCoreBlocks() int {
	most := 0
	for i := range t.BlockDim {
		most = max(most, len(t.coreBlocks(i)))
	}
	return most
}

// Blocks is the number of output blocks over all cores.
func (t GEMMTiling) Blocks() int {
	n := 0
	for i := range t.BlockDim {
		n += len(t.coreBlocks(i))
	}
	return n
}

// gemmLayout is a candidate of chooseLayout: base block and core grid.
type gemmLayout struct{ bm, bn, gm, gn int }

// chooseLayout picks the output block baseM × baseN (multiples of the
// fractal, the fp32 accumulator tile fitting L0C) and the core grid
// GridM × GridN (at most cores) that minimise the modelled time of the
// slowest core (layoutEstimate). Among layouts within 1e-9 of the least
// time it takes the one on more cores, then the better balanced (least
// over most core time), then the larger block, which re-reads fewer
// panels. Fixed sides (opt.BaseM, opt.BaseN) are kept.
func chooseLayout(prof npu.Profile, t GEMMTiling, m, k, n, pm, pn, pk, cores int, opt GEMMOptions, kFor func(bm, bn int) int) gemmLayout {
	fr := t.Frac
	e := layoutEstimate{prof: prof, t: t, k: k, pk: pk, sparse: opt.sparse24, kFor: kFor}
	e.rate, e.lat = prof.GMPath(npu.AICore)
	best := gemmLayout{fr.M, fr.N, 1, 1}
	bestT, bestBal := math.Inf(1), 0.0
	fm, fn := ceilDiv(max(m, 1), fr.M), ceilDiv(max(n, 1), fr.N)
	// sides are the base sides to try for a band of n elements: every
	// multiple of the fractal up to the band (a larger block only pads),
	// at most 512, or the fixed one.
	sides := func(fixed, band, f int) (lo, hi int) {
		if fixed > 0 {
			return fixed, fixed
		}
		return f, min(roundUp(band, f), 512)
	}
	cubeRate := 1.0 // a fractal step's cycles, at the least (gemm24: half a step)
	if t.In == tensor.Float32 {
		cubeRate = 2
	}
	if opt.sparse24 {
		cubeRate /= 2
	}
	for gm := 1; gm <= min(cores, fm); gm++ {
		for gn := min(cores/gm, fn); gn >= 1; gn-- {
			// Band 0 is a largest, the last band a smallest (band).
			_, rows := band(max(m, 1), fr.M, gm, 0)
			_, cols := band(max(n, 1), fr.N, gn, 0)
			// No block shape runs a region faster than its cube steps:
			// a grid whose largest region takes longer is out.
			if cubeRate*float64(ceilDiv(rows, fr.M)*ceilDiv(cols, fr.N))*float64(pk/fr.K) > bestT*(1+1e-9) {
				continue
			}
			_, rowsLo := band(max(m, 1), fr.M, gm, gm-1)
			_, colsLo := band(max(n, 1), fr.N, gn, gn-1)
			bmLo, bmHi := sides(opt.BaseM, rows, fr.M)
			bnLo, bnHi := sides(opt.BaseN, cols, fr.N)
			for bm := bmLo; bm <= bmHi; bm += fr.M {
				for bn := bnLo; bn <= bnHi; bn += fr.N {
					if bm*bn*4 > prof.L0CBytes {
						break
					}
					if kFor(bm, bn) < 1 {
						continue
					}
					hi := e.region(rows, cols, bm, bn)
					bal := e.region(rowsLo, colsLo, bm, bn) / hi
					switch {
					case hi < bestT*(1-1e-9):
					case hi > bestT*(1+1e-9):
						continue
					case gm*gn != best.gm*best.gn:
						if gm*gn < best.gm*best.gn {
							continue
						}
					case bal != bestBal:
						if bal < bestBal {
							continue
						}
					case bm*bn <= best.bm*best.bn:
						continue
					}
					best, bestT, bestBal = gemmLayout{bm, bn, gm, gn}, hi, bal
				}
			}
		}
	}
	// The tiling also serves problems whose fixed base is larger than
	// any band: keep it.
	if opt.BaseM > 0 {
		best.bm = opt.BaseM
	}
	if opt.BaseN > 0 {
		best.bn = opt.BaseN
	}
	return best
}

// layoutEstimate models a core's time on its region, as the kernel
// runs it: per block, the largest of its cube cycles with the fixpipe's
// drain of L0C (the next block's first Mmad waits for it), its operand
// panels' transfer time and their L1 → L0 loads (the panels and the L0
// tiles are double-buffered, so the three overlap); per region, the
// first panel's load before the cube starts and the last block's cast
// and store after it ends. Transfers cost GMPath's
// latency and rate (the L2 port, or the core's share of HBM).
type layoutEstimate struct {
	prof   npu.Profile
	t      GEMMTiling
	k, pk  int
	sparse bool
	kFor   func(bm, bn int) int
	rate   float64
	lat    int
}

// region is the modelled time of a rows × cols region in bm × bn blocks.
func (e layoutEstimate) region(rows, cols, bm, bn int) float64 {
	if rows == 0 || cols == 0 {
		return 0
	}
	t, fr := e.t, e.t.Frac
	size, outSize := float64(t.In.Size()), float64(t.OutDType.Size())
	kb := e.kFor(bm, bn)
	step, _ := stepFor(e.prof, t, bm, bn, kb, e.pk, ceilDiv(rows, bm)*ceilDiv(cols, bn), e.sparse)
	depth := step * kb
	panels := float64(max(1, ceilDiv(e.pk, depth)))
	cubeRate := 1.0
	if t.In == tensor.Float32 {
		cubeRate = 2
	}
	aFrac, xfers := 1.0, 2.0
	if e.sparse {
		aFrac, xfers = 0.5+0.125, 3 // half of A's k, and its meta: a byte per 4 k
	}
	lat := float64(e.lat)
	block := func(mr, nr int) float64 {
		mc, nc := roundUp(mr, fr.M), roundUp(nr, fr.N)
		cube := cubeRate * float64(mc/fr.M) * float64(e.pk/fr.K) * float64(nc/fr.N)
		if e.sparse {
			cube = float64(cube/2) + float64(float64(mc*e.pk/2)/npu.L0LoadBytesPerCycle)
		}
		dma := float64(panels*xfers*lat) + (float64(float64(mr*e.k)*size*aFrac)+float64(float64(e.k*nr)*size))/e.rate
		aL0 := float64(mc * e.pk)
		if e.sparse {
			aL0 /= 2
		}
		mte1 := (aL0 + float64(e.pk*nc)) * size / npu.L0LoadBytesPerCycle
		fix := float64(float64(mc*nc*4) / npu.FixpipeBytesPerCycle)
		// The next block's panels load while this one's accumulators
		// drain; its cube waits for the drain (one L0C tile).
		return math.Max(cube+fix, math.Max(dma, mte1))
	}
	var sum float64
	fullR, remR := rows/bm, rows%bm
	fullC, remC := cols/bn, cols%bn
	for _, r := range [][2]int{{bm, fullR}, {remR, 1}} {
		for _, c := range [][2]int{{bn, fullC}, {remC, 1}} {
			if r[0] > 0 && c[0] > 0 && r[1] > 0 && c[1] > 0 {
				sum += float64(float64(r[1]*c[1]) * block(r[0], c[0]))
			}
		}
	}
	fill := lat + float64((min(bm, rows)+min(bn, cols))*min(depth, e.pk))*size/e.rate
	// The last block's epilogue follows its drain, nothing after it to
	// hide behind: the cast to the output dtype and the store.
	mr, nr := min(bm, rows), min(bn, cols)
	cast := float64(roundUp(mr, fr.M)*roundUp(nr, fr.N)*4) / float64(e.prof.VectorBytesPerCycle)
	store := cast + lat + float64(mr*nr)*outSize/e.rate
	return sum + fill + store
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundDown(n, m int) int { return n / m * m }

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
