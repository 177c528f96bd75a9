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
	OutNZ      bool `json:"out_nz,omitempty"`    // out (and c) in FRACTAL_NZ (gemm_layout.go)
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
	if err := prof.ValidateFields(); err != nil {
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
	for _, l0 := range []struct {
		space      npu.Space
		need, have int
	}{{npu.L0A, t.L0ABytes, prof.L0ABytes}, {npu.L0B, t.L0BBytes, prof.L0BBytes}, {npu.L0C, t.L0CBytes, prof.L0CBytes}} {
		if l0.need > l0.have {
			return GEMMTiling{}, fmt.Errorf("gemm: base blocks %d×%d×%d need %d bytes of %s; the device has %d",
				baseM, baseN, baseK, l0.need, l0.space, l0.have)
		}
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
