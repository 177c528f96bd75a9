package kernels

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// runSC runs sparse_compress with variant opt and faults fs.
func runSC(t *testing.T, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor, opt SparseCompressOptions, fs ...npu.Fault) (map[string]*tensor.Tensor, *npu.Cost) {
	t.Helper()
	ctx := npu.WithFaults(WithVariant(context.Background(), Variant{Name: "t", Op: "sparse_compress", Options: opt}), npu.NewFaults(fs...))
	// The kernel gets copies, as from the harness: a fault that writes
	// into its inputs (k-compacted-in-place) must not change the next run's.
	cp := make(map[string]*tensor.Tensor, len(in))
	for n, x := range in {
		cp[n] = x.Clone()
	}
	out, cost, err := SparseCompressKernel(ctx, dev, p, cp)
	if err != nil {
		t.Fatalf("sparse_compress %v options %+v faults %v: %v", p, opt, fs, err)
	}
	return out, cost
}

func scBits(t *tensor.Tensor) []byte {
	var b bytes.Buffer
	fmt.Fprint(&b, t.Shape, t.F16(), t.I32(), t.U8())
	return b.Bytes()
}

// TestSparseCompressKeepAgrees: the kernel's own keep count (it may not
// call the reference's) is the reference's on every L to 300 and every
// sinks to 5, at ratios whose product lands on an integer (where a floor
// taken the wrong way shows), just off one, and at 1.
func TestSparseCompressKeepAgrees(t *testing.T) {
	ratios := []float64{1e-9, 0.1, 0.125, 0.3, 1.0 / 3, 0.5, 0.7, 0.75, 0.9, 0.999, 1}
	for l := 0; l <= 300; l++ {
		for sinks := 0; sinks <= 5; sinks++ {
			for _, r := range ratios {
				if got, want := sparseCompressKeep(l, r, sinks), reference.KeepCount(l, r, sinks); got != want {
					t.Fatalf("L=%d keep_ratio=%v sinks=%d: kernel keeps %d, reference %d", l, r, sinks, got, want)
				}
			}
		}
	}
}

// TestSparseCompressChunkedSameBits: the chunked path (scores spilled to
// GM, radix select) gives the in-UB path's bits on every distribution and
// chunk size, for the correct kernel and under every catalogue fault, so
// each fault the suite catches on the in-UB path it catches on the
// chunked one too (and the chunked variant raises no false alarm). A
// chunk of 1 token, one smaller than the sinks, and one wider than L all
// run; the cost differs (the workspace traffic is charged: the chunked
// path stores exactly H·L·4 bytes more).
func TestSparseCompressChunkedSameBits(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	faults := []npu.Fault{""}
	for _, f := range SparseCompressFaults {
		faults = append(faults, f.Fault)
	}
	type tc struct {
		dist         string
		h, l, d      int
		ratio, sinks string
	}
	cases := []tc{
		{ops.DistUniform, 4, 64, 16, "0.5", "2"}, {ops.DistNormal, 2, 16, 8, "0.1", "4"},
		{ops.DistNormal, 2, 33, 8, "0.3", "0"}, {ops.DistNormal, 2, 17, 8, "1", "2"},
		{ops.DistEqual, 2, 24, 8, "0.5", "2"}, {ops.DistLastBits, 3, 48, 16, "0.5", "2"},
		{ops.DistAscending, 2, 40, 8, "0.25", "2"}, {ops.DistDescending, 2, 40, 8, "0.25", "2"},
		{ops.DistDupRows, 3, 48, 8, "0.4", "2"}, {ops.DistSpecial, 3, 40, 4, "0.5", "1"},
		{ops.DistSpecial, 2, 300, 2, "0.7", "3"}, {ops.DistUniform, 5, 1, 8, "0.5", "2"},
	}
	for ci, c := range cases {
		p := ops.Params{"keep_ratio": c.ratio, "sinks": c.sinks}
		seed := uint64(11 + ci)
		in, err := ops.SparseCompress.Generate(p, ops.Gen{Dims: map[string]int{"h": c.h, "l": c.l, "d": c.d}, Dist: c.dist, Seed: seed})
		if err != nil {
			t.Fatalf("sparse_compress %v dist %s seed %d: generate: %v", p, c.dist, seed, err)
		}
		for _, f := range faults {
			var fs []npu.Fault
			if f != "" {
				fs = []npu.Fault{f}
			}
			want, wcost := runSC(t, dev, p, in, SparseCompressOptions{}, fs...)
			for _, chunk := range []int{1, 3, 7, 64, 1000} {
				got, gcost := runSC(t, dev, p, in, SparseCompressOptions{ChunkTokens: chunk}, fs...)
				for name, w := range want {
					if !bytes.Equal(scBits(got[name]), scBits(w)) {
						t.Errorf("sparse_compress %v h,l,d=%d,%d,%d dist %s seed %d fault %q chunk %d: output %s: got %v, want %v (the in-UB path's)",
							p, c.h, c.l, c.d, c.dist, seed, f, chunk, name, got[name], w)
					}
				}
				// Both paths store the same outputs; the chunked one the
				// scores to the workspace besides, 4 bytes a token. (Their
				// loads differ both ways: the workspace read back, and the
				// in-UB path's merged blocks, which copy in skipped rows.)
				if ws := int64(c.h * c.l * 4); gcost.GMBytesOut-wcost.GMBytesOut != ws {
					t.Errorf("sparse_compress %v dist %s seed %d chunk %d: GM bytes stored: got %d, want the in-UB path's %d + the workspace's %d",
						p, c.dist, seed, chunk, gcost.GMBytesOut, wcost.GMBytesOut, ws)
				}
			}
		}
	}
}

// TestSparseCompressChunkedMergedBlocks: the chunked path's final pass
// copies the kept rows in merged blocks (scMergeJoins, the in-UB path's
// rule), each block's span read once for k and once for v. The GM bytes
// read are derived, not measured: per head the rows in for the importance
// (L·D·2), when a cut is needed the workspace read back by the four radix
// passes and the final pass (5·(L − sinks)·4), and the spans of the blocks
// scMergeBlock cuts the kept indices (the kernel's own output, checked
// against the in-UB path) into at a chunk's rows and scMergeGap's gap
// (2·span·D·2). Each case keeps rows with gaps that merging skips, so a
// kernel back to a copy per run reads fewer bytes (and pays more copies)
// and fails; and the merged blocks are fewer than the runs.
func TestSparseCompressChunkedMergedBlocks(t *testing.T) {
	prof := npu.Ascend910B()
	dev := npu.MustNewDevice(prof)
	for _, c := range []struct {
		h, l, d      int
		ratio, sinks string
		opt          SparseCompressOptions
	}{
		{2, 70000, 8, "0.25", "4", SparseCompressOptions{}}, // golden l_past_2e16's shape
		{1, 32768, 128, "0.25", "4", SparseCompressOptions{}},
		{8, 1024, 128, "0.5", "4", SparseCompressOptions{ChunkTokens: 256}},
		{8, 1024, 128, "0.5", "4", SparseCompressOptions{ChunkTokens: 48, BufferNum: 1}},
		{3, 300, 16, "0.3", "0", SparseCompressOptions{ChunkTokens: 7}},
	} {
		p := ops.Params{"keep_ratio": c.ratio, "sinks": c.sinks}
		vp, err := ops.SparseCompress.Validate(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ops.ParseSparseCompress(vp)
		if err != nil {
			t.Fatal(err)
		}
		in, err := ops.SparseCompress.Generate(p, ops.Gen{Dims: map[string]int{"h": c.h, "l": c.l, "d": c.d}, Dist: ops.DistUniform, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := runSC(t, dev, p, in, SparseCompressOptions{})
		got, cost := runSC(t, dev, p, in, c.opt)
		if !bytes.Equal(scBits(got["indices"]), scBits(want["indices"])) {
			t.Fatalf("sparse_compress %v h,l,d=%d,%d,%d options %+v: indices differ from the in-UB path's", p, c.h, c.l, c.d, c.opt)
		}
		chunk := c.opt.ChunkTokens
		if chunk <= 0 {
			if sparseCompressFitsUB(prof, c.l, c.d) {
				t.Fatalf("h,l,d=%d,%d,%d fits the UB: not a chunked case", c.h, c.l, c.d)
			}
			chunk = min(sparseCompressChunk(prof, c.d), roundUp(c.l, 32))
		}
		keep := sparseCompressKeep(c.l, cfg.KeepRatio, cfg.Sinks)
		res := min(cfg.Sinks, c.l)
		gapMax := scMergeGap(prof, c.d*2)
		rowBytes := int64(c.d * 2)
		var wantIn int64
		blocks, runs := 0, 0
		for hh := range c.h {
			wantIn += int64(c.l) * rowBytes
			if need := keep - res; need != 0 && need != c.l-res {
				wantIn += 5 * int64(c.l-res) * 4
			}
			sel := make([]int, keep)
			for i, x := range got["indices"].I32()[hh*keep : (hh+1)*keep] {
				sel[i] = int(x)
			}
			for i := range sel {
				if i == 0 || sel[i] != sel[i-1]+1 {
					runs++
				}
			}
			for t0 := 0; t0 < keep; {
				u, _ := scMergeBlock(sel, t0, chunk, chunk, gapMax)
				wantIn += 2 * int64(sel[u-1]-sel[t0]+1) * rowBytes
				blocks++
				t0 = u
			}
		}
		t.Logf("sparse_compress %v h,l,d=%d,%d,%d options %+v: chunk %d, gap %d: %d runs in %d blocks, %d GM bytes read, %d cycles",
			p, c.h, c.l, c.d, c.opt, chunk, gapMax, runs, blocks, cost.GMBytesIn, cost.Cycles)
		if blocks >= runs {
			t.Fatalf("sparse_compress %v h,l,d=%d,%d,%d: %d blocks for %d runs: the case merges nothing", p, c.h, c.l, c.d, blocks, runs)
		}
		if cost.GMBytesIn != wantIn {
			t.Errorf("sparse_compress %v h,l,d=%d,%d,%d options %+v: GM bytes read %d, want %d (importance, workspace, %d merged blocks' spans)",
				p, c.h, c.l, c.d, c.opt, cost.GMBytesIn, wantIn, blocks)
		}
	}
}
