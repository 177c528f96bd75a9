package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// sparse24_prune on the vector cores. The groups of four along K are
// contiguous in w's row-major storage, so the host deals the M·K/4 groups
// to the vector cores in contiguous shares of whole 32-byte blocks of meta
// output (32 groups); each core loops over tiles of its share: DataCopyPad
// the tile's 4·G fp16 values in, rank each group's magnitudes with
// compare-and-select passes (|w|, NaN as the largest, ties to the lower
// index), gather the two kept values in index order, pack the meta byte,
// and DataCopyPad values (2·G fp16) and meta (G bytes) out between guard
// bands. The selection compares fp16 magnitudes exactly, so the outputs
// do not depend on the tiling.

// Sparse24PruneOptions overrides the tiling (a valid variant): the
// core count and the groups per tile.
type Sparse24PruneOptions struct {
	BlockDim, TileGroups int
}

// sparse24BlockGroups is the tile granule: 32 groups, one 32-byte UB
// block of meta.
const sparse24BlockGroups = 32

// sparse24PruneTile is the default tile in groups: the most whole granules
// whose w (8 B a group), values (4 B) and meta (1 B) fit the UB
// double-buffered, with a block of rounding per buffer; 0 when not one
// granule fits.
func sparse24PruneTile(prof npu.Profile) int {
	return max(0, roundDown((prof.UBBytes-6*prof.UBAlign())/(2*(8+4+1)), sparse24BlockGroups))
}

// sparse24PruneMinUB is the UB one tile of a granule needs.
func sparse24PruneMinUB(prof npu.Profile) int {
	return 2*(8+4+1)*sparse24BlockGroups + 6*prof.UBAlign()
}

// Sparse24PruneKernel is sparse24_prune's KernelFunc.
func Sparse24PruneKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	vp, err := ops.Sparse24Prune.Validate(p)
	if err != nil {
		return nil, nil, err
	}
	if err := ops.CheckInputs(ops.Sparse24Prune, vp, in); err != nil {
		return nil, nil, err
	}
	opt := variantOptions[Sparse24PruneOptions](ctx)
	w := in["w"]
	m, k := w.Shape[0], w.Shape[1]
	groups := m * k / 4
	prof := dev.Profile()
	const blockGroups = sparse24BlockGroups
	blockDim := min(prof.VectorCores, ceilDiv(max(groups, 1), blockGroups))
	if opt.BlockDim > 0 {
		blockDim = opt.BlockDim
	}
	tile := opt.TileGroups
	if tile <= 0 {
		tile = sparse24PruneTile(prof)
	}
	if tile < 1 {
		// A tile of no group never advances the tile loop below.
		return nil, nil, fmt.Errorf("sparse24_prune: UB of %d bytes cannot hold one double-buffered tile of %d groups (needs %d; ub_bytes)",
			prof.UBBytes, sparse24BlockGroups, sparse24PruneMinUB(prof))
	}
	vals, err := npu.NewGuardedOutput("values", tensor.Float16, m, k/2)
	if err != nil {
		return nil, nil, fmt.Errorf("sparse24_prune: %w", err)
	}
	defer vals.Release()
	meta, err := npu.NewGuardedOutput("meta", tensor.Uint8, m, k/4)
	if err != nil {
		return nil, nil, fmt.Errorf("sparse24_prune: %w", err)
	}
	defer meta.Release()
	if groups == 0 {
		return map[string]*tensor.Tensor{"values": vals.Tensor(), "meta": meta.Tensor()}, dev.ZeroCost(), nil
	}
	per := ceilDiv(ceilDiv(groups, blockGroups), blockDim) * blockGroups
	// A tile past a core's share is one tile all the same: sizing it by
	// the share keeps the buffers to the input's size on a large UB.
	tile = min(tile, per)
	f := newSparse24PruneFaults(npu.FaultsFrom(ctx))
	cost, err := dev.Launch(ctx, blockDim, func(c *npu.Core) error {
		g0 := c.BlockIdx * per
		g1 := min(groups, g0+per)
		if g0 >= g1 {
			return nil
		}
		if err := c.SetBufferNum(2); err != nil {
			return err
		}
		var wUB, vUB, mUB [2]*npu.Buffer
		for i := range 2 {
			var err error
			if wUB[i], err = c.AllocUB(tile * 8); err != nil {
				return err
			}
			if vUB[i], err = c.AllocUB(tile * 4); err != nil {
				return err
			}
			if mUB[i], err = c.AllocUB(tile); err != nil {
				return err
			}
		}
		// Explicit synchronisation, held by the sanitizer: ping-pong
		// buffers q = 0, 1, event id q per buffer. MTE2 fills wUB[q] once V
		// is done with it (V→MTE2), V prunes once the copy landed
		// (MTE2→V) into vUB[q] and mUB[q] once their stores drained
		// (MTE3→V), MTE3 stores once V is done (V→MTE3). The freeing
		// events start set and are taken once more at the end.
		if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
			return err
		}
		for q := range 2 {
			c.SetFlag(npu.PipeV, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		for q, s := 0, g0; s < g1; q, s = q^1, s+tile {
			c.BeginTile()
			n := min(tile, g1-s)
			c.WaitFlag(npu.PipeV, npu.PipeMTE2, q)
			if err := c.DataCopyPadIn(wUB[q], w, f.gmOffset(4*s), 4*n); err != nil {
				return err
			}
			c.SetFlag(npu.PipeMTE2, npu.PipeV, q)
			c.WaitFlag(npu.PipeMTE2, npu.PipeV, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, q)
			src, dv, dm := wUB[q].F16(), vUB[q].F16(), mUB[q].U8()
			var kept [][2]int
			for g := 0; g < n; g++ {
				x := src[4*g : 4*g+4]
				first, second := prune24Group(f, x[0].Bits(), x[1].Bits(), x[2].Bits(), x[3].Bits())
				dv[2*g], dv[2*g+1] = x[first], x[second]
				dm[g] = ops.EncodeMeta24(first, second)
				if f.prunedInPlace {
					kept = append(kept, [2]int{first, second})
				}
			}
			if err := f.pruneInPlace(c, w, 4*s, wUB[q], kept); err != nil {
				return err
			}
			// |w|, three compare-and-select passes, the gather, the pack.
			c.VectorWork(8 * n * 6)
			c.SetFlag(npu.PipeV, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeV, npu.PipeMTE3, q)
			c.WaitFlag(npu.PipeV, npu.PipeMTE3, q)
			if err := c.DataCopyPadOut(vals.GM(), vals.Base()+f.gmOffset(2*s), vUB[q], 2*n); err != nil {
				return err
			}
			if err := c.DataCopyPadOut(meta.GM(), meta.Base()+f.gmOffset(s), mUB[q], n); err != nil {
				return err
			}
			c.SetFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		for q := range 2 {
			c.WaitFlag(npu.PipeV, npu.PipeMTE2, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sparse24_prune: %w", err)
	}
	res := map[string]*tensor.Tensor{"values": vals.Tensor(), "meta": meta.Tensor()}
	if err := npu.CheckGuards(vals, meta); err != nil {
		return res, cost, fmt.Errorf("sparse24_prune: %w", err)
	}
	return res, cost, nil
}

// prune24Group ranks one group's fp16 bit patterns by magnitude (the
// sign bit cleared, a NaN above every number, ties to the lower index)
// and returns the two kept indices ascending. The fault plan's hooks give
// the NaN key and the tie rule.
func prune24Group(f sparse24PruneFaults, bits ...uint16) (first, second int) {
	var key [4]int32
	for i, b := range bits[:4] {
		key[i] = int32(b & 0x7fff)
		if key[i] > 0x7c00 { // NaN
			key[i] = f.nanKey()
		}
	}
	beats := func(i, j int) bool {
		if key[i] == key[j] {
			return f.tieBeats(i, j)
		}
		return key[i] > key[j]
	}
	best, next := 0, 1
	if beats(1, 0) {
		best, next = 1, 0
	}
	for i := 2; i < 4; i++ {
		switch {
		case beats(i, best):
			best, next = i, best
		case beats(i, next):
			next = i
		}
	}
	return min(best, next), max(best, next)
}
