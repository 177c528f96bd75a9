package kernels

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

// TestGEMMExplicitSyncClean: gemm and gemm24 run in explicit sync mode
// (gemm_sync.go), and neither the default kernel nor its variants
// (single-buffered, another tiling and core count, A's or B's panels
// resident in L1 across blocks, none) has a sanitizer
// finding on shapes with several k-panels, slices and output blocks per
// core, every mode, C and int8 scales; every variant computes the
// default's bits.
func TestGEMMExplicitSyncClean(t *testing.T) {
	seeds := []uint64{1, 2}
	for _, mode := range []string{"fp16_fp32acc", "fp32", "int8_int32acc", "fp16"} {
		for _, dims := range []map[string]int{{"m": 40, "k": 300, "n": 24}, {"m": 300, "k": 1100, "n": 600}} {
			syncCleanAndSame(t, ops.GEMM, GEMMKernel, ops.Params{"mode": mode, "beta": "0.5"}, dims, ops.DistUniform, seeds,
				GEMMOptions{BufferNum: 1}, GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5},
				GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5, Reuse: ReuseA}, GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5, Reuse: ReuseB, BufferNum: 1},
				GEMMOptions{Reuse: ReuseNone})
		}
		if mode == "fp32" || mode == "fp16" {
			continue
		}
		for _, dims := range []map[string]int{{"m": 40, "k": 300, "n": 24}, {"m": 300, "k": 1100, "n": 600}} {
			syncCleanAndSame(t, ops.GEMM24, GEMM24Kernel, ops.Params{"mode": mode}, dims, ops.DistUniform, seeds,
				GEMM24Options{BufferNum: 1}, GEMM24Options{BaseM: 16, BaseN: 16, BlockDim: 5})
		}
	}
}

// TestGEMMMissingWaitCaught: gemm's missing-wait fault (the MTE1 → M
// hand-off dropped) computes the correct kernel's bits and only the
// sanitizer reports it, a race on the Mmad's L0 reads.
func TestGEMMMissingWaitCaught(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	const seed = 11
	for _, dims := range []map[string]int{{"m": 16, "k": 16, "n": 16}, {"m": 40, "k": 300, "n": 24}, {"m": 300, "k": 64, "n": 600}} {
		gemm, what := gemmSyncRun(t, dev, dims, seed)
		checkSyncFault(t, what, gemm, FaultGEMMMissingWait, npu.KindRAW, "Mmad")
	}
}

// TestGEMM24LoadsHidden: in gemm24 at 2048³ (fp16_fp32acc) MTE1 loads
// slice s+1 of a k-panel into one L0 slot while the cube multiplies slice
// s out of the other. A panel of depth StepK·BaseK is S = StepK slices,
// a block P = K/depth panels. A slice's load (240×32 + 64×128 fp16, 124
// cycles at 256 B/cycle) is shorter than its Mmad (240 fractal steps and
// 30 of index loads), so MTE1 is the shorter pipe, and every load but
// two per block runs wholly under the Mmad of the slice before it: a
// panel's first load has no Mmad of that panel to run under (the cube
// waits for it, as the panel lands from MTE2), and in a block's first
// panel the second load may run while the cube still waits for FIX to
// drain the last block's accumulators from L0C. So the overlap is at
// least (P·(S−1) − 1)/(P·S) of MTE1's busy time, block by block (a block
// at the edge has smaller slices, the same fractions). With BufferNum 1
// each load waits for the Mmad before it and each Mmad for its load: 0.
func TestGEMM24LoadsHidden(t *testing.T) {
	const s = 2048
	two, tl := gemm24Figure(t, testDev, s, s, s)
	p := ops.Params{"mode": "fp16_fp32acc"}
	in, err := ops.GEMM24.Generate(p, ops.Gen{Dims: map[string]int{"m": s, "k": s, "n": s}, Dist: ops.DistUniform, Seed: 1})
	if err != nil {
		t.Fatalf("gemm24 %s seed=1: %v", dims3(s, s, s), err)
	}
	ctx := WithVariant(npu.WithCostOnly(context.Background()), Variant{Name: "test", Op: "gemm24", Options: GEMM24Options{BufferNum: 1}})
	_, one, err := GEMM24Kernel(ctx, testDev, p, in)
	if err != nil {
		t.Fatalf("gemm24 %s seed=1 BufferNum 1: %v", dims3(s, s, s), err)
	}
	sl, pn := tl.StepK, ceilDiv(s, tl.depth())
	want := float64(pn*(sl-1)-1) / float64(pn*sl)
	t.Logf("gemm24 fp16_fp32acc %s seed=1: ping-pong cycles %d MTE1/cube %.4f (S = %d, P = %d, bound %.4f); single-buffered cycles %d MTE1/cube %.4f",
		dims3(s, s, s), two.Cycles, two.CubeLoadOverlap, sl, pn, want, one.Cycles, one.CubeLoadOverlap)
	if two.CubeLoadOverlap < want {
		t.Errorf("gemm24 fp16_fp32acc %s seed=1: MTE1/cube overlap: got %.4f / want ≥ (P·(S−1)−1)/(P·S) = %.4f (S = %d slices a panel, P = %d panels a block)", dims3(s, s, s), two.CubeLoadOverlap, want, sl, pn)
	}
	if one.CubeLoadOverlap != 0 {
		t.Errorf("gemm24 fp16_fp32acc %s seed=1 BufferNum 1: MTE1/cube overlap: got %.4f / want 0 (one L0 slot)", dims3(s, s, s), one.CubeLoadOverlap)
	}
}
