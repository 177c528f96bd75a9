package kernels

import "github.com/npuverify/npuverify/npu"

// transdata faults: the silent layout bugs of issue 35, each at the spot
// of the host tiling or the tile copy where it would sit.
const (
	// FaultTransDataPaddingGarbage: the padding lanes and rows of a
	// fractal tile keep what the UB buffer held before (a DataCopyPad
	// without its pad value, or a tile buffer never cleared) instead of
	// +0. Only a destination with padding shows it (C not a multiple of
	// C0, M or K off the fractal edges).
	FaultTransDataPaddingGarbage npu.Fault = "transdata/padding-garbage"
	// FaultTransDataC1OffByOne: C1 computed as C/C0 + 1 instead of
	// ceil(C/C0): one slab too many exactly when C is a multiple of C0.
	FaultTransDataC1OffByOne npu.Fault = "transdata/c1-off-by-one"
	// FaultTransDataC0FP16: C0 hard-coded as fp16's 16, so int8 (32) and
	// fp32 (8) are laid out with the wrong fractal width.
	FaultTransDataC0FP16 npu.Fault = "transdata/c0-of-fp16"
	// FaultTransDataHWSwapped: the host writes the output's spatial dims
	// as W, H: wrong whenever H ≠ W.
	FaultTransDataHWSwapped npu.Fault = "transdata/h-w-swapped"
	// FaultTransDataLastRowDropped: the last partial fractal row block of
	// FRACTAL_NZ (the M mod 16 rows) is never copied (the row count
	// rounded down to whole fractals).
	FaultTransDataLastRowDropped npu.Fault = "transdata/last-partial-fractal-dropped"
	// FaultTransDataBatchStride: the fractal side's stride per N (or ND
	// batch) is C·Rp, the unpadded channel count, instead of C1·C0·Rp:
	// right for N = 1 (and when C is a multiple of C0), wrong for every
	// later batch.
	FaultTransDataBatchStride npu.Fault = "transdata/batch-stride-unpadded"
	// FaultTransDataMissingStoreWait: the copy out of a tile does not
	// wait for the tile's producer (the SetFlag/WaitFlag<V, MTE3> pair
	// before the store is missing): on the device MTE3 may store the
	// buffer before the transpose (or the copy in) finished. Right bits
	// in program order; only the sanitizer (RAW) shows it.
	FaultTransDataMissingStoreWait npu.Fault = "transdata/missing-wait-before-store"
)

// TransDataFaults is transdata's fault catalogue.
var TransDataFaults = []FaultInfo{
	{FaultTransDataPaddingGarbage, "transdata", "padding left with stale UB bytes instead of +0"},
	{FaultTransDataC1OffByOne, "transdata", "C1 = C/C0 + 1: one slab too many when C is a multiple of C0"},
	{FaultTransDataC0FP16, "transdata", "fp16's C0 (16) used for every dtype (int8 wants 32, fp32 8)"},
	{FaultTransDataHWSwapped, "transdata", "H and W swapped in the output shape"},
	{FaultTransDataLastRowDropped, "transdata", "last partial 16-row fractal block of FRACTAL_NZ dropped"},
	{FaultTransDataBatchStride, "transdata", "per-batch stride of the fractal side unpadded: wrong only when N > 1"},
	{FaultTransDataMissingStoreWait, "transdata", "copy out issued without waiting for the tile's transpose (missing WaitFlag<V, MTE3>)"},
}

// transDataFaults is transdata's fault plan for one launch. The zero
// value is the correct kernel.
type transDataFaults struct {
	padGarbage, c1OffByOne, c0FP16, hwSwapped, lastRowDropped, batchStride bool
	noStoreWait                                                            bool // a sync fault: only the sanitizer sees it
}

func newTransDataFaults(fs npu.Faults) transDataFaults {
	return transDataFaults{
		padGarbage:     fs.Has(FaultTransDataPaddingGarbage),
		c1OffByOne:     fs.Has(FaultTransDataC1OffByOne),
		c0FP16:         fs.Has(FaultTransDataC0FP16),
		hwSwapped:      fs.Has(FaultTransDataHWSwapped),
		lastRowDropped: fs.Has(FaultTransDataLastRowDropped),
		batchStride:    fs.Has(FaultTransDataBatchStride),
		noStoreWait:    fs.Has(FaultTransDataMissingStoreWait),
	}
}

// c0 is the fractal width for elements of size bytes: 32 bytes of them,
// or 16 under c0-of-fp16.
func (f transDataFaults) c0(size int) int {
	if f.c0FP16 {
		return 16
	}
	return 32 / size
}

// c1 is the slab count of c channels: ceil(c/c0), or c/c0 + 1 under
// c1-off-by-one.
func (f transDataFaults) c1(c, c0 int) int {
	if f.c1OffByOne {
		return c/c0 + 1
	}
	return ceilDiv(c, c0)
}

// spatial returns the output's H and W: swapped under h-w-swapped.
func (f transDataFaults) spatial(h, w int) (int, int) {
	if f.hwSwapped {
		return w, h
	}
	return h, w
}

// realRows is the number of rows the kernel copies of rows real ones:
// all, or under last-partial-fractal-dropped (FRACTAL_NZ only) the whole
// 16-row blocks.
func (f transDataFaults) realRows(rows int, nz bool) int {
	if f.lastRowDropped && nz {
		return rows / 16 * 16
	}
	return rows
}

// outStride is the fractal side's stride per outer index: the padded one,
// or the unpadded under batch-stride-unpadded.
func (f transDataFaults) outStride(padded, unpadded int) int {
	if f.batchStride {
		return unpadded
	}
	return padded
}

// snapshot returns the first n bytes b holds before a tile is built in
// it, under padding-garbage (nil otherwise).
func (f transDataFaults) snapshot(b *npu.Buffer, n int) []byte {
	if !f.padGarbage {
		return nil
	}
	return append([]byte(nil), b.Bytes()[:n]...)
}

// garbagePadding puts back, under padding-garbage, the stale bytes of
// every padding element of the [rows × c0] tile in b (rows at or past
// valid, lanes at or past cs), as if the copy had never cleared them.
// A buffer never written holds Poison bytes.
func (f transDataFaults) garbagePadding(b *npu.Buffer, stale []byte, valid, cs, rows, c0, size int) {
	if stale == nil {
		return
	}
	d := b.Bytes()
	for r := 0; r < rows; r++ {
		lo := cs
		if r >= valid {
			lo = 0
		}
		copy(d[(r*c0+lo)*size:(r+1)*c0*size], stale[(r*c0+lo)*size:(r+1)*c0*size])
	}
}
