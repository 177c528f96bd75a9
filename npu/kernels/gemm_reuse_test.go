package kernels

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// reuseReadBytes is the GM bytes gemm's cores read for A and for B
// under tiling tl (no C; int8's scales, per row and column, with A's and
// B's), derived from the shape and the
// tiling alone: core i owns the region of row band i/GridN and column
// band i%GridN (band), cut into ⌈rows/BaseM⌉ × ⌈cols/BaseN⌉ blocks. A
// block reads its rows of A and its columns of B over all of K, except
// that under Reuse a block that follows one of its group (the blocks of
// one block row under ReuseA, of one block column under ReuseB) reads
// the reused operand only past the resident panels' k,
// min(K, ResidentPanels·StepK·BaseK). So without reuse A is read once
// per block column of the region, and with every panel resident once
// per region.
func reuseReadBytes(tl GEMMTiling) (aBytes, bBytes int64) {
	size := int64(tl.In.Size())
	k := int64(tl.K)
	kres := int64(min(tl.K, tl.ResidentPanels*tl.StepK*tl.BaseK))
	for i := range tl.GridM * tl.GridN {
		_, rows := band(tl.M, tl.Frac.M, tl.GridM, i/tl.GridN)
		_, cols := band(tl.N, tl.Frac.N, tl.GridN, i%tl.GridN)
		bm, bn := int64(ceilDiv(rows, tl.BaseM)), int64(ceilDiv(cols, tl.BaseN))
		a := bn * int64(rows) * k // each block column reads the region's rows
		b := bm * int64(cols) * k // each block row reads the region's columns
		switch tl.Reuse {
		case ReuseA:
			a = int64(rows)*k + (bn-1)*int64(rows)*(k-kres)
		case ReuseB:
			b = int64(cols)*k + (bm-1)*int64(cols)*(k-kres)
		}
		aBytes += a * size
		bBytes += b * size
		if tl.Int8 {
			// Each block's epilogue reads its rows of scale_a and its
			// columns of scale_b (fp32), counted with A and B.
			aBytes += bn * int64(rows) * 4
			bBytes += bm * int64(cols) * 4
		}
	}
	return aBytes, bBytes
}

// TestGEMMReuseGMBytes: the GM bytes gemm reads (Cost.GMBytesIn, no C)
// are reuseReadBytes' A + B for the tiling chosen, at shapes with
// several blocks per core under either side's reuse and none; at 1024³
// fp16_fp32acc the default keeps all of K of B's panels in L1, so each
// core reads its B columns once (not once per block); and reuse reads
// strictly fewer bytes than none wherever a core has a group, in no more
// cycles, with no sanitizer finding (the sanitizer holds cost-only
// launches too). A kernel
// that reloaded the resident panels, or a tiling that lost them, fails.
func TestGEMMReuseGMBytes(t *testing.T) {
	const fp16, int8 = "fp16_fp32acc", "int8_int32acc"
	for _, c := range []struct {
		mode    string
		m, k, n int
		opt     GEMMOptions
		whole   bool    // every panel of the reused side resident
		slower  float64 // the cycles reuse may add, relative to none's
	}{
		{fp16, 1024, 1024, 1024, GEMMOptions{}, true, 0},
		{fp16, 2048, 2048, 2048, GEMMOptions{}, false, 0},
		{fp16, 4096, 4096, 4096, GEMMOptions{}, false, 0},
		{fp16, 2048, 512, 2048, GEMMOptions{}, true, 0}, // A whole, several groups a core
		{fp16, 2048, 2048, 2048, GEMMOptions{Reuse: ReuseA}, false, 0},
		{fp16, 300, 1100, 600, GEMMOptions{BaseM: 32, BaseN: 48, BlockDim: 3, Reuse: ReuseA}, true, 0},
		{fp16, 300, 1100, 600, GEMMOptions{BaseM: 32, BaseN: 48, BlockDim: 3, Reuse: ReuseB}, true, 0},
		{fp16, 300, 1100, 600, GEMMOptions{BaseM: 32, BaseN: 48, BlockDim: 3, Reuse: ReuseB, BufferNum: 1}, true, 0},
		// The one loss a sweep of 13 shapes in three modes found: 16
		// cycles (0.06 %) in 2×2 blocks a core with 1 of 3 B panels
		// resident.
		{int8, 1536, 1536, 1536, GEMMOptions{}, false, 0.001},
		{int8, 2048, 512, 2048, GEMMOptions{}, true, 0}, // the port-bound gain
	} {
		what := fmt.Sprintf("gemm mode=%s %s seed=1 opt %+v", c.mode, dims3(c.m, c.k, c.n), c.opt)
		cost, tl := gemmFigure(t, testDev, c.mode, c.m, c.k, c.n, c.opt)
		a, b := reuseReadBytes(tl)
		t.Logf("%s: reuse %q %d of %d panels resident (step %d): gm_bytes_in %d (A %d, B %d), cycles %d", what, tl.Reuse, tl.ResidentPanels, tl.panels(), tl.StepK, cost.GMBytesIn, a, b, cost.Cycles)
		if tl.Reuse == "" || tl.ResidentPanels < 1 {
			t.Errorf("%s: got no reuse / want a side's panels resident", what)
			continue
		}
		if c.whole && tl.ResidentPanels != tl.panels() {
			t.Errorf("%s: got %d of %d panels resident / want all", what, tl.ResidentPanels, tl.panels())
		}
		if len(cost.Findings) != 0 {
			t.Errorf("%s: got findings %v / want none", what, cost.Findings)
		}
		if cost.GMBytesIn != a+b {
			t.Errorf("%s: gm_bytes_in: got %d / want A %d + B %d = %d", what, cost.GMBytesIn, a, b, a+b)
		}
		none := c.opt
		none.Reuse = ReuseNone
		nc, ntl := gemmFigure(t, testDev, c.mode, c.m, c.k, c.n, none)
		na, nb := reuseReadBytes(ntl)
		t.Logf("%s: without reuse (step %d): gm_bytes_in %d l2_hit_bytes %d cycles %d cube_util %.3f overlap %.3f balance %.3f; with: l2_hit_bytes %d cube_util %.3f overlap %.3f balance %.3f",
			what, ntl.StepK, nc.GMBytesIn, nc.L2HitBytes, nc.Cycles, nc.CubeUtil, nc.Overlap, nc.LoadBalance, cost.L2HitBytes, cost.CubeUtil, cost.Overlap, cost.LoadBalance)
		if float64(cost.Cycles) > float64(nc.Cycles)*(1+c.slower) {
			// A group's reload of its resident panels must hide behind
			// the last group's later panels, as a ping-pong slot's does.
			t.Errorf("%s: cycles: got %d / want no more than without reuse, %d (+%g)", what, cost.Cycles, nc.Cycles, c.slower)
		}
		if nc.GMBytesIn != na+nb || nc.GMBytesIn <= cost.GMBytesIn {
			t.Errorf("%s: without reuse gm_bytes_in: got %d / want A %d + B %d = %d, more than reuse's %d", what, nc.GMBytesIn, na, nb, na+nb, cost.GMBytesIn)
		}
	}
	// At 2048³ the depth hides a panel's transfers, and the tiling keeps
	// it rather than shrink it to hold more of B: shallower panels with
	// more resident cost cycles.
	def, _ := gemmFigure(t, testDev, "fp16_fp32acc", 2048, 2048, 2048, GEMMOptions{})
	for _, step := range []int{2, 3} {
		o := GEMMOptions{StepK: step, Reuse: ReuseB}
		c, tl := gemmFigure(t, testDev, "fp16_fp32acc", 2048, 2048, 2048, o)
		t.Logf("gemm fp16_fp32acc 2048³ seed=1 opt %+v: %d of %d B panels resident: cycles %d against the default's %d", o, tl.ResidentPanels, tl.panels(), c.Cycles, def.Cycles)
		if c.Cycles < def.Cycles {
			t.Errorf("gemm fp16_fp32acc 2048³ seed=1 opt %+v: cycles %d / want no fewer than the default's %d (the tiling should have taken it)", o, c.Cycles, def.Cycles)
		}
	}
	_, cfg, _ := genGEMM(t, ops.Params{"mode": "fp16_fp32acc"}, ops.DistNormal, 16, 16, 16, 1)
	tl, err := NewGEMMTiling(testDev.Profile(), cfg, 1024, 1024, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if _, b := reuseReadBytes(tl); tl.Reuse != ReuseB || b != int64(1024*1024*2*tl.GridM) {
		t.Errorf("gemm fp16_fp32acc 1024³: got reuse %q, B bytes %d / want %q, B read once per core: 1024·1024·2 per row band × %d = %d", tl.Reuse, b, ReuseB, tl.GridM, 1024*1024*2*tl.GridM)
	}
}

// TestGEMMReuseSameBits: reuse (either side, single- and double-
// buffered, K ascending or descending) computes the bits of the kernel
// without it on shapes with several blocks, panels and groups per core,
// with no sanitizer finding.
func TestGEMMReuseSameBits(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	for _, mode := range []string{"fp16_fp32acc", "int8_int32acc", "fp32"} {
		for _, base := range []GEMMOptions{{BaseM: 32, BaseN: 32, BlockDim: 2, StepK: 2}, {BaseM: 16, BaseN: 16, BlockDim: 5, BaseK: 32, ReverseK: true}} {
			for _, bufs := range []int{1, 2} {
				vp, cfg, in := genGEMM(t, ops.Params{"mode": mode, "beta": "0.5"}, ops.DistUniform, 100, 700, 130, 3)
				run := func(reuse string) (*tensor.Tensor, *npu.Cost, GEMMTiling) {
					o := base
					o.Reuse, o.BufferNum = reuse, bufs
					tl, err := GEMMTilingWith(dev.Profile(), cfg, 100, 700, 130, o)
					if err != nil {
						t.Fatalf("gemm %v opt %+v: tiling: %v", vp, o, err)
					}
					out, cost, err := GEMM(context.Background(), dev, cfg, in, o)
					if err != nil {
						t.Fatalf("gemm %v opt %+v: %v", vp, o, err)
					}
					return out, cost, tl
				}
				want, _, _ := run(ReuseNone)
				for _, side := range []string{ReuseA, ReuseB} {
					got, cost, tl := run(side)
					what := fmt.Sprintf("gemm %v 100×700×130 seed=3 opt %+v BufferNum %d reuse %s", vp, base, bufs, side)
					if tl.Reuse != side || tl.ResidentPanels < 1 {
						t.Errorf("%s: got reuse %q with %d panels / want %q", what, tl.Reuse, tl.ResidentPanels, side)
					}
					if len(cost.Findings) != 0 {
						t.Errorf("%s: got findings %v / want none", what, cost.Findings)
					}
					if same, i := tensor.BitsEqual(got, want); !same {
						t.Errorf("%s: element %d differs from the kernel without reuse", what, i)
					}
				}
			}
		}
	}
}
