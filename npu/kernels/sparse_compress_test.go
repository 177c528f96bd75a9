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
