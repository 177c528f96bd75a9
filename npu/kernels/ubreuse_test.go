package kernels

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// vector_add's UB reuse by hand, fp32, n = 20, default tiling on
// ascend910b. A 32-byte block holds 8 fp32, so 3 blocks go to 3 cores:
// cores 0 and 1 take elements [0, 8) and [8, 16), core 2 takes [16, 20)
// (a partial block, copied with DataCopyPad). Each core runs one tile:
//
//	DataCopy(Pad)In x, y   UB loads 2·cnt·4 GM bytes (core 2: 2·16, not its padded 2·32)
//	Add z = x + y          UB reads both sources, 2·cnt·4
//	DataCopy(Pad)Out z     UB out cnt·4
//
// Summed: loads 64+64+32 = 160, reads 64+64+32 = 160, out 32+32+16 = 80,
// so UB reuse = 1 − 160/160 = 0: every byte the Add reads was loaded for
// it, as a streaming elementwise op must.
func TestVectorAddUBReuse(t *testing.T) {
	const n, seed = 20, 7
	x, y := genVectorAdd(t, tensor.Float32, n, seed)
	_, cost, err := VectorAdd(context.Background(), testDev, x, y, VectorAddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("vector_add dtype=fp32 n=%d seed=%d", n, seed)
	if cost.BlockDim != 3 {
		t.Fatalf("%s: got block_dim %d / want 3 (the derivation assumes it)", prefix, cost.BlockDim)
	}
	if cost.UBLoadBytes != 160 || cost.UBReadBytes != 160 || cost.UBOutBytes != 80 || cost.UBReuse != 0 {
		t.Errorf("%s: got ub load %d read %d out %d reuse %v / want 160 160 80 0",
			prefix, cost.UBLoadBytes, cost.UBReadBytes, cost.UBOutBytes, cost.UBReuse)
	}
}

func genVectorAdd(t *testing.T, dt tensor.DType, n int, seed uint64) (x, y *tensor.Tensor) {
	t.Helper()
	vp, err := ops.VectorAdd.Validate(ops.Params{"dtype": dt.String()})
	if err != nil {
		t.Fatal(err)
	}
	in, err := ops.VectorAdd.Generate(vp, ops.Gen{Dims: map[string]int{"n": n}, Dist: ops.DistNormal, Seed: seed})
	if err != nil {
		t.Fatalf("vector_add dtype=%s n=%d seed=%d: %v", dt, n, seed, err)
	}
	return in["x"], in["y"]
}

// gemm's UB reuse, mode fp16_fp32acc (C and out fp16), alpha = 2,
// beta = 0.5, M = N = 64 (no fractal padding). The cube's operands go
// GM → L1 → L0 and never touch UB; each L0C accumulator tile is reused
// by every Mmad over K and reaches UB through the fixpipe once, finished.
// Per output element the epilogue then does:
//
//	scale  (alpha)   reads the fp32 accumulator            4
//	DataCopy2DIn C   UB load (GM bytes)                     2
//	beta·C           reads the accumulator and C       4 + 2
//	Cast to fp16     reads the fp32 result                 4
//	DataCopy2DOut    UB out                                 2
//
// so UB loads 2·M·N, reads 14·M·N, out 2·M·N and UB reuse = 1 − 2/14 =
// 6/7 ≈ 0.857, whatever K is: the UB data are the K loop's on-chip
// result, and only C comes from GM. The check runs K = 16 and K = 1024
// and wants the same UB counters (while the L1 loads grow with K).
func TestGEMMUBReuse(t *testing.T) {
	const m, n, seed = 64, 64, 3
	var gmIn [2]int64
	for i, k := range []int{16, 1024} {
		vp, cfg, in := genGEMM(t, ops.Params{"mode": "fp16_fp32acc", "alpha": "2", "beta": "0.5"}, ops.DistNormal, m, k, n, seed)
		_, cost, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("gemm %v %dx%dx%d seed=%d", vp, m, k, n, seed)
		const mn = m * n
		if cost.UBLoadBytes != 2*mn || cost.UBReadBytes != 14*mn || cost.UBOutBytes != 2*mn {
			t.Errorf("%s: got ub load %d read %d out %d / want %d %d %d",
				prefix, cost.UBLoadBytes, cost.UBReadBytes, cost.UBOutBytes, 2*mn, 14*mn, 2*mn)
		}
		if want := 6.0 / 7; math.Abs(cost.UBReuse-want) > 1e-12 {
			t.Errorf("%s: got ub reuse %v / want %v", prefix, cost.UBReuse, want)
		}
		gmIn[i] = cost.GMBytesIn
	}
	if gmIn[1] <= gmIn[0] {
		t.Errorf("gemm fp16_fp32acc %dx{16,1024}x%d seed=%d: got gm_bytes_in %d for K=1024 / want more than %d for K=16", m, n, seed, gmIn[1], gmIn[0])
	}
}
