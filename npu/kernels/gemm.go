package kernels

import (
	"context"
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// gemm: out = alpha·(A·B) + beta·C in the five precision modes of the op
// contract (ops/gemm.go), which also states the evaluation model this
// kernel follows bit for bit.
//
// Host side, GEMMTilingWith pads M, N, K to the cube fractal (16×16×16
// for fp16/bf16/fp32, 16×32×16 for int8), picks base blocks baseM × baseN
// (the L0C accumulator tile) and baseK (one Mmad) that fit L0A/L0B
// double-buffered and L0C, an L1 depth of StepK·baseK that fits the A and
// B panels double-buffered in L1, shrinks the base blocks while there are
// fewer output blocks than AI cores, and deals the output blocks to the
// cores round-robin. Device side, each core, for each of its output
// blocks, walks K ascending: DMA the A and B panels GM → L1 (zero-padded),
// load baseK slices L1 → L0A/L0B, Mmad into L0C (the first one starts
// from +0); then moves the accumulators L0C → UB in row chunks, runs the
// vector epilogue (dequantise, alpha, beta·C) and the cast to the output
// dtype, and DMAs the real rows and columns out. Padding rows and columns
// never reach GM, and padded k are 0·0 products, which leave every
// accumulator unchanged (it is never −0). Each output element is
// accumulated by one core in one L0C tile over K ascending, so the result
// does not depend on the tiling or the core count (GEMMOptions.ReverseK,
// a valid variant for the mutation score's false-alarm check, walks K
// descending instead). The output is stored between guard bands
// (npu.NewGuardedMatrix); the f.Has(Fault…) branches are the mutation
// score's fault hooks (fault_gemm.go).

// GEMMTiling is the host-side tiling of gemm.
type GEMMTiling struct {
	M, K, N    int
	Mode       string
	In         tensor.DType
	Frac       npu.Fractal // cube fractal of the input dtype
	BaseM      int         `json:"base_m"` // L0C tile rows (multiple of Frac.M)
	BaseN      int         `json:"base_n"` // L0C tile columns (multiple of Frac.N)
	BaseK      int         `json:"base_k"` // k per Mmad (multiple of Frac.K, and of 16 for blocked16)
	StepK      int         `json:"step_k"` // baseK slices per L1 panel
	BlocksM    int         `json:"blocks_m"`
	BlocksN    int         `json:"blocks_n"`
	BlockDim   int         `json:"block_dim"`  // AI cores launched; 0 for an empty output
	ChunkRows  int         `json:"chunk_rows"` // epilogue rows per UB chunk
	BufferNum  int         `json:"buffer_num"` // 2: L1 and L0 double-buffered
	L1Bytes    int         `json:"l1_bytes"`   // per core
	L0ABytes   int         `json:"l0a_bytes"`
	L0BBytes   int         `json:"l0b_bytes"`
	L0CBytes   int         `json:"l0c_bytes"`
	UBBytes    int         `json:"ub_bytes"`
	Blocked    bool        `json:"blocked"`
	HasC       bool        `json:"has_c"`
	Int8       bool        `json:"int8"`
	OutDType   tensor.DType
	CDType     tensor.DType
	AccDType   tensor.DType
	EpiDType   tensor.DType
	Alpha      float64
	Beta       float64
	ScaleABcst bool // scale_a is [1]
	ScaleBBcst bool // scale_b is [1]
	ReverseK   bool `json:"reverse_k,omitempty"` // K panels and slices in descending order
}

// GEMMOptions overrides the tiling; zero fields take the default. Base
// sizes must be multiples of the fractal and fit the memories.
type GEMMOptions struct {
	BaseM, BaseN, BaseK, StepK int
	BlockDim                   int // used exactly (cores beyond the block count idle)
	// ReverseK accumulates the K panels and the baseK slices within them
	// in descending order: a valid kernel that sums in another order (the
	// bound holds for every order; the bits may differ from the default).
	ReverseK bool
}

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
	if err := prof.Validate(); err != nil {
		return GEMMTiling{}, err
	}
	if m < 0 || k < 0 || n < 0 {
		return GEMMTiling{}, fmt.Errorf("gemm: negative size %d×%d×%d", m, k, n)
	}
	mode := cfg.Mode
	t := GEMMTiling{
		M: m, K: k, N: n, Mode: mode.Name, In: mode.In, Frac: prof.CubeFractal(mode.In),
		BufferNum: 2, Blocked: cfg.Accumulate == ops.GEMMBlocked16, HasC: cfg.Beta != 0,
		Int8: mode.Int8(), OutDType: mode.Out, CDType: mode.Out, AccDType: mode.Acc, EpiDType: mode.Epilogue,
		Alpha: cfg.Alpha, Beta: cfg.Beta, ReverseK: opt.ReverseK,
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
	baseM, baseN := opt.BaseM, opt.BaseN
	if baseM == 0 || baseN == 0 {
		bm, bn := chooseBase(prof, t, m, k, n, pm, pn, pk, opt.BaseM, opt.BaseN, kFor)
		if baseM == 0 {
			baseM = bm
		}
		if baseN == 0 {
			baseN = bn
		}
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
	if t.L0ABytes > prof.L0ABytes || t.L0BBytes > prof.L0BBytes || t.L0CBytes > prof.L0CBytes {
		return GEMMTiling{}, fmt.Errorf("gemm: base blocks %d×%d×%d need L0A %d, L0B %d, L0C %d bytes; the device has %d, %d, %d",
			baseM, baseN, baseK, t.L0ABytes, t.L0BBytes, t.L0CBytes, prof.L0ABytes, prof.L0BBytes, prof.L0CBytes)
	}
	// L1: double-buffered A [baseM × depth] and B [depth × baseN] panels.
	maxStep := prof.L1Bytes / (t.BufferNum * (baseM + baseN) * baseK * size)
	if maxStep < 1 {
		return GEMMTiling{}, fmt.Errorf("gemm: L1 of %d bytes cannot hold two %d×%d and %d×%d panels", prof.L1Bytes, baseM, baseK, baseK, baseN)
	}
	t.StepK = max(1, min(maxStep, 4, ceilDiv(pk, baseK)))
	if opt.StepK > 0 {
		if opt.StepK > maxStep {
			return GEMMTiling{}, fmt.Errorf("gemm: StepK %d: L1 holds at most %d", opt.StepK, maxStep)
		}
		t.StepK = opt.StepK
	}
	t.L1Bytes = t.BufferNum * (baseM + baseN) * t.depth() * size
	if t.depth() >= pk {
		t.L1Bytes = t.BufferNum * (baseM + baseN) * pk * size // one panel holds all of K
	}
	if m > 0 && n > 0 {
		t.BlocksM, t.BlocksN = ceilDiv(m, baseM), ceilDiv(n, baseN)
		blocks := t.BlocksM * t.BlocksN
		t.BlockDim = min(prof.AICores, blocks)
		if opt.BlockDim > 0 {
			if opt.BlockDim > prof.AICores {
				return GEMMTiling{}, fmt.Errorf("gemm: BlockDim %d exceeds the %d AI cores", opt.BlockDim, prof.AICores)
			}
			t.BlockDim = opt.BlockDim
		}
	}
	// UB per epilogue row: fp32 accumulators, the output row, the C row;
	// plus the scales.
	align := prof.UBAlign()
	rowBytes := baseN*4 + baseN*mode.Out.Size()
	if t.HasC {
		rowBytes += baseN * mode.Out.Size()
	}
	fixed := 0
	if t.Int8 {
		fixed = roundUp(baseM*4, align) + roundUp(baseN*4, align)
	}
	t.ChunkRows = min(baseM, (prof.UBBytes-fixed-3*align)/rowBytes)
	if t.ChunkRows < 1 {
		return GEMMTiling{}, fmt.Errorf("gemm: UB of %d bytes cannot hold one epilogue row of %d columns", prof.UBBytes, baseN)
	}
	t.UBBytes = fixed + roundUp(t.ChunkRows*baseN*4, align) + roundUp(t.ChunkRows*baseN*mode.Out.Size(), align)
	if t.HasC {
		t.UBBytes += roundUp(t.ChunkRows*baseN*mode.Out.Size(), align)
	}
	return t, nil
}

// chooseBase picks the output block baseM × baseN (multiples of the
// fractal, the fp32 accumulator tile fitting L0C) that minimises the
// modeled time of the slowest core: rounds of blocks per core times the
// larger of a block's cube cycles and its GM traffic (A and B panels are
// double-buffered, so the two overlap), plus DMA latencies and the store.
// Fixed sides (non-zero fixM, fixN) are kept. Ties go to the larger
// block, which re-reads fewer panels.
func chooseBase(prof npu.Profile, t GEMMTiling, m, k, n, pm, pn, pk, fixM, fixN int, kFor func(bm, bn int) int) (int, int) {
	fr, size := t.Frac, t.In.Size()
	rate := prof.DMABytesPerCycle(npu.AICore)
	cubeRate := 1.0
	if t.In == tensor.Float32 {
		cubeRate = 2
	}
	best, bestM, bestN := math.Inf(1), fr.M, fr.N
	for bm := fr.M; bm <= min(pm, 512); bm += fr.M {
		if fixM > 0 && bm != fixM {
			continue
		}
		for bn := fr.N; bn <= min(pn, 512); bn += fr.N {
			if fixN > 0 && bn != fixN {
				continue
			}
			if bm*bn*4 > prof.L0CBytes {
				break
			}
			kb := kFor(bm, bn)
			if kb < 1 {
				continue
			}
			blocks := ceilDiv(max(m, 1), bm) * ceilDiv(max(n, 1), bn)
			rounds := float64(ceilDiv(blocks, min(blocks, prof.AICores)))
			cube := cubeRate * float64(bm/fr.M) * float64(pk/fr.K) * float64(bn/fr.N)
			dma := float64((bm+bn)*k*size)/rate + float64(2*prof.DMALatencyCycles*ceilDiv(pk, 4*kb))
			store := float64(bm*bn*t.OutDType.Size())/rate + float64(prof.DMALatencyCycles)
			est := rounds * (math.Max(cube, dma) + store)
			if est < best*(1-1e-9) || (est <= best*(1+1e-9) && bm*bn > bestM*bestN) {
				best, bestM, bestN = est, bm, bn
			}
		}
	}
	return bestM, bestN
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

// GEMM runs gemm on dev with validated config cfg and inputs held to the
// op contract (a, b, optional c, scale_a/scale_b for int8).
func GEMM(ctx context.Context, dev *npu.Device, cfg ops.GEMMConfig, in map[string]*tensor.Tensor, opt GEMMOptions) (*tensor.Tensor, *npu.Cost, error) {
	if dev == nil {
		return nil, nil, fmt.Errorf("gemm: nil device")
	}
	m, k, n, err := ops.GEMMDims(in)
	if err != nil {
		return nil, nil, err
	}
	t, err := GEMMTilingWith(dev.Profile(), cfg, m, k, n, opt)
	if err != nil {
		return nil, nil, err
	}
	a, b, c := in["a"], in["b"], in["c"]
	if t.HasC && c == nil {
		return nil, nil, fmt.Errorf("gemm: input \"c\" is missing (beta ≠ 0)")
	}
	var sa, sb *tensor.Tensor
	if t.Int8 {
		if sa, sb = in["scale_a"], in["scale_b"]; sa == nil || sb == nil {
			return nil, nil, fmt.Errorf("gemm: int8 mode needs scale_a and scale_b")
		}
		t.ScaleABcst, t.ScaleBBcst = sa.Len() == 1, sb.Len() == 1
	}
	if t.BlockDim == 0 {
		out, err := tensor.New(t.OutDType, m, n)
		if err != nil {
			return nil, nil, fmt.Errorf("gemm: %w", err)
		}
		return out, dev.ZeroCost(), nil
	}
	// out lives in GM between guard bands of whole rows: a store past
	// either end lands in a guard and is reported, not lost.
	out, err := npu.NewGuardedMatrix("out", t.OutDType, m, n)
	if err != nil {
		return nil, nil, fmt.Errorf("gemm: %w", err)
	}
	defer out.Release() // what GEMM returns is out.Tensor(), a copy
	if npu.FaultsFrom(ctx).Has(FaultGEMMBTransposed) {
		b = readAsTransposed(b)
	}
	// Decode A and B concurrently: on the host, before the launch, the
	// decode is serial work.
	var gb *npu.GMMatrix
	var errB error
	decodedB := make(chan struct{})
	go func() {
		defer close(decodedB)
		gb, errB = npu.NewGMMatrix(b)
	}()
	ga, errA := npu.NewGMMatrix(a)
	<-decodedB
	if ga != nil {
		defer ga.Release()
	}
	if gb != nil {
		defer gb.Release()
	}
	if errA != nil {
		return nil, nil, fmt.Errorf("gemm: input \"a\": %w", errA)
	}
	if errB != nil {
		return nil, nil, fmt.Errorf("gemm: input \"b\": %w", errB)
	}
	// The SIMD multiply-then-add path is the sequential fp32 model when
	// every product is exact in fp32 and B is finite (see npu.MmadParams).
	exact32 := t.AccDType == tensor.Float32 && !t.Blocked && !gb.NonFinite
	switch t.In {
	case tensor.Float16:
		// fp16 products have 22 bits and exponents in [−48, 31].
	case tensor.BFloat16:
		// bf16 products are exact in fp32 unless they leave its exponent range.
		exact32 = exact32 && ga.MaxAbs*gb.MaxAbs < math.MaxFloat32/2 &&
			(math.IsInf(ga.MinNonZero, 1) || math.IsInf(gb.MinNonZero, 1) || ga.MinNonZero*gb.MinNonZero >= 0x1p-126)
	default:
		exact32 = false
	}
	cost, err := dev.LaunchOn(ctx, npu.AICore, t.BlockDim, gemmKernel(t, exact32, ga, gb, c, sa, sb, out))
	if err != nil {
		return nil, nil, fmt.Errorf("gemm: %w", err)
	}
	if err := npu.CheckGuards(out); err != nil {
		return out.Tensor(), cost, fmt.Errorf("gemm: %w", err)
	}
	return out.Tensor(), cost, nil
}

// gemmKernel is the device side: one block per AI core. The
// `f.Has(Fault…)` branches are the fault hooks of the mutation score
// (fault_gemm.go); with no fault set they never run.
func gemmKernel(t GEMMTiling, exact32 bool, a, b *npu.GMMatrix, c, sa, sb *tensor.Tensor, out *npu.GuardedOutput) npu.Kernel {
	return func(core *npu.Core) error {
		f := core.Faults()
		blocks := t.BlocksM * t.BlocksN
		if core.BlockIdx >= blocks {
			return nil
		}
		if err := core.SetBufferNum(t.BufferNum); err != nil {
			return err
		}
		size := t.In.Size()
		depth := t.depth()
		alloc := func(s npu.Space, bytes int) (*npu.Buffer, error) { return core.Alloc(s, max(bytes, 1)) }
		var aL1, bL1 [2]npu.L1Tile
		defer func() {
			for i := range aL1 {
				aL1[i].Release()
				bL1[i].Release()
			}
		}()
		var aL0, bL0 [2]npu.L0Tile
		// Double-buffer only what this core loads more than once.
		myBlocks := ceilDiv(blocks-core.BlockIdx, core.BlockDim)
		nL1 := min(t.BufferNum, myBlocks*max(1, ceilDiv(t.K, depth)))
		nL0 := min(t.BufferNum, myBlocks*max(1, ceilDiv(t.K, t.BaseK)))
		for i := 0; i < nL1; i++ {
			var err error
			if aL1[i].Buf, err = alloc(npu.L1, t.BaseM*t.panelK()*size); err != nil {
				return err
			}
			if bL1[i].Buf, err = alloc(npu.L1, t.panelK()*t.BaseN*size); err != nil {
				return err
			}
		}
		for i := 0; i < nL0; i++ {
			var err error
			if aL0[i].Buf, err = alloc(npu.L0A, t.BaseM*t.BaseK*size); err != nil {
				return err
			}
			if bL0[i].Buf, err = alloc(npu.L0B, t.BaseK*t.BaseN*size); err != nil {
				return err
			}
		}
		l0c, err := alloc(npu.L0C, t.BaseM*t.BaseN*4)
		if err != nil {
			return err
		}
		accUB, err := core.AllocUB(t.ChunkRows * t.BaseN * 4)
		if err != nil {
			return err
		}
		outUB, err := core.AllocUB(t.ChunkRows * t.BaseN * t.OutDType.Size())
		if err != nil {
			return err
		}
		var cUB, saUB, sbUB *npu.Buffer
		if t.HasC {
			if cUB, err = core.AllocUB(t.ChunkRows * t.BaseN * t.CDType.Size()); err != nil {
				return err
			}
		}
		if t.Int8 {
			if saUB, err = core.AllocUB(t.BaseM * 4); err != nil {
				return err
			}
			if sbUB, err = core.AllocUB(t.BaseN * 4); err != nil {
				return err
			}
		}
		fr := t.Frac
		ping, l0 := 0, 0
		for blk := core.BlockIdx; blk < blocks; blk += core.BlockDim {
			m0, n0 := (blk/t.BlocksN)*t.BaseM, (blk%t.BlocksN)*t.BaseN
			mr, nr := min(t.BaseM, t.M-m0), min(t.BaseN, t.N-n0)
			mc, nc := roundUp(mr, fr.M), roundUp(nr, fr.N)
			first := true
			panels := max(1, ceilDiv(t.K, depth))
			for pi := range panels {
				k0 := pi * depth
				if t.ReverseK {
					k0 = (panels - 1 - pi) * depth
				}
				core.BeginTile()
				kr := min(depth, t.K-k0)
				kc := roundUp(kr, t.BaseK)
				if kr > 0 {
					kc = roundUp(kr, fr.K)
					if t.Blocked {
						kc = roundUp(kr, lcm(fr.K, ops.GEMMBlockK))
					}
					if err := core.LoadL1(&aL1[ping], a, m0, k0, mr, kr, mc, kc); err != nil {
						return err
					}
					if err := core.LoadL1(&bL1[ping], b, k0, n0, kr, nr, kc, nc); err != nil {
						return err
					}
				}
				slices := max(1, ceilDiv(kc, t.BaseK))
				for si := range slices {
					kk := si * t.BaseK
					if t.ReverseK {
						kk = (slices - 1 - si) * t.BaseK
					}
					kb := min(t.BaseK, kc-kk)
					if f.Has(FaultGEMMLastKDropped) && kb > 0 && kk+k0 > 0 && k0+kk+kb >= t.K {
						continue
					}
					if kb > 0 {
						if err := core.LoadL0(&aL0[l0], &aL1[ping], 0, kk, mc, kb); err != nil {
							return err
						}
						if err := core.LoadL0(&bL0[l0], &bL1[ping], kk, 0, kb, nc); err != nil {
							return err
						}
					} else {
						kb = 0 // K = 0: Mmad only clears the accumulators
						aL0[l0].DType, aL0[l0].Rows, aL0[l0].Cols = t.In, mc, 0
						bL0[l0].DType, bL0[l0].Rows, bL0[l0].Cols = t.In, 0, nc
					}
					p := npu.MmadParams{
						M: mc, K: kb, N: nc, UsefulM: mr, UsefulN: nr,
						UsefulK: max(0, min(kb, t.K-k0-kk)),
						Acc:     t.AccDType, Blocked: t.Blocked, Init: first, Exact32: exact32,
					}
					if f.Has(FaultGEMMFP16Acc) && p.Acc == tensor.Float32 {
						p.Acc = tensor.Float16
					}
					if err := core.Mmad(l0c, &aL0[l0], &bL0[l0], p); err != nil {
						return err
					}
					first = false
					l0 = (l0 + 1) % nL0
				}
				ping = (ping + 1) % nL1
			}
			if err := gemmEpilogue(core, f, t, l0c, accUB, outUB, cUB, saUB, sbUB, c, sa, sb, out, m0, n0, mr, nr, mc, nc); err != nil {
				return err
			}
		}
		return nil
	}
}

// gemmEpilogue moves one output block's accumulators L0C → UB in row
// chunks, applies the epilogue and stores the real rows and columns (GM
// row out.BaseRow()+i holds output row i).
func gemmEpilogue(core *npu.Core, f npu.Faults, t GEMMTiling, l0c, accUB, outUB, cUB, saUB, sbUB *npu.Buffer,
	c, sa, sb *tensor.Tensor, out *npu.GuardedOutput, m0, n0, mr, nr, mc, nc int) error {
	if t.Int8 {
		if f.Has(FaultGEMMScalesSwapped) {
			sa, sb = sb, sa
		}
		saN, sbN := mr, nr
		if t.ScaleABcst {
			saN = 1
		}
		if t.ScaleBBcst {
			sbN = 1
		}
		off := m0
		if t.ScaleABcst {
			off = 0
		}
		if err := core.DataCopyPadIn(saUB, sa, off, saN); err != nil {
			return err
		}
		off = n0
		if t.ScaleBBcst {
			off = 0
		}
		if err := core.DataCopyPadIn(sbUB, sb, off, sbN); err != nil {
			return err
		}
	}
	for r0 := 0; r0 < mr; r0 += t.ChunkRows {
		rows := min(t.ChunkRows, mr-r0)
		n := rows * nc
		if err := core.FixpipeToUB(accUB, l0c, r0*nc, n); err != nil {
			return err
		}
		if t.Int8 {
			if !t.ScaleBBcst {
				// Scales of the padding columns: any finite value (never stored).
				s := sbUB.F32()
				for j := nr; j < nc; j++ {
					s[j] = 1
				}
			}
			if err := core.DequantI32(accUB, accUB, saUB, sbUB, rows, nc, r0, t.ScaleABcst, t.ScaleBBcst); err != nil {
				return err
			}
		}
		alphaLate := f.Has(FaultGEMMAlphaScalesC) && t.HasC
		if t.Alpha != 1 && !alphaLate {
			if err := core.ScaleRound(t.EpiDType, accUB, accUB, t.Alpha, n); err != nil {
				return err
			}
		}
		if t.HasC && !f.Has(FaultGEMMBetaIgnored) {
			if err := core.DataCopy2DIn(cUB, c, t.N, m0+r0, n0, rows, nr, nc, rows); err != nil {
				return err
			}
			if err := core.AddScaledRound(t.EpiDType, accUB, accUB, cUB, t.CDType, t.Beta, n); err != nil {
				return err
			}
		}
		if alphaLate && t.Alpha != 1 {
			if err := core.ScaleRound(t.EpiDType, accUB, accUB, t.Alpha, n); err != nil {
				return err
			}
		}
		if err := core.CastF32(t.OutDType, outUB, accUB, n); err != nil {
			return err
		}
		storeRows, srcLd := rows, nc
		if f.Has(FaultGEMMPaddingRowsStored) && r0+rows == mr {
			storeRows += min(mc-mr, t.ChunkRows-rows)
		}
		if f.Has(FaultGEMMPaddingLeaks) {
			srcLd = nr
		}
		if err := core.DataCopy2DOut(out.GM(), t.N, out.BaseRow()+m0+r0, n0, storeRows, nr, outUB, srcLd); err != nil {
			return err
		}
	}
	return nil
}

// GEMMKernel is gemm's KernelFunc: params and inputs as in the op contract.
func GEMMKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	cfg, err := ops.ParseGEMM(p)
	if err != nil {
		return nil, nil, err
	}
	vp, _ := ops.GEMM.Validate(p)
	if err := ops.CheckInputs(ops.GEMM, vp, in); err != nil {
		return nil, nil, err
	}
	if cfg.Beta == 0 {
		// c is not read when beta = 0.
		in = withoutKey(in, "c")
	}
	out, cost, err := GEMM(ctx, dev, cfg, in, variantOptions[GEMMOptions](ctx))
	if err != nil {
		if out != nil { // a guard violation: out was produced, and a guard written
			return map[string]*tensor.Tensor{"out": out}, cost, err
		}
		return nil, nil, err
	}
	return map[string]*tensor.Tensor{"out": out}, cost, nil
}

func withoutKey(in map[string]*tensor.Tensor, key string) map[string]*tensor.Tensor {
	if _, ok := in[key]; !ok {
		return in
	}
	out := make(map[string]*tensor.Tensor, len(in))
	for k, v := range in {
		if k != key {
			out[k] = v
		}
	}
	return out
}
