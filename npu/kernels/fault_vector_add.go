package kernels

import (
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// vectorAddFaults is vector_add's fault plan for one launch: which of its
// catalogue faults are on, resolved once from the launch's context
// (VectorAdd builds it) and consulted through the hooks below, each
// called at the spot of the kernel where its real bug would sit. The zero
// value is the correct kernel: every hook returns what the kernel uses
// anyway.
type vectorAddFaults struct {
	tailDropped, coreOffByOne, lastCoreSkipped, lastTileSkipped bool
	staleBuffer, writePastEnd, inputModified, yReadAsX          bool
	bf16AsFP16, index16                                         bool
	// The faults of the Add's conversion step (convert).
	castTruncates, saturatesNotInf, infNotSaturated, subnormalsFlushed bool
	int8Wraps, int8Clamp127, tiesAway                                  bool
	// The synchronisation faults, which only the sanitizer sees.
	missingWait, pingPongReuse, wholeTileAdd bool
}

func newVectorAddFaults(fs npu.Faults) vectorAddFaults {
	return vectorAddFaults{
		tailDropped:       fs.Has(FaultVectorAddTailDropped),
		coreOffByOne:      fs.Has(FaultVectorAddCoreOffByOne),
		lastCoreSkipped:   fs.Has(FaultVectorAddLastCoreSkipped),
		lastTileSkipped:   fs.Has(FaultVectorAddLastTileSkipped),
		staleBuffer:       fs.Has(FaultVectorAddStaleBuffer),
		writePastEnd:      fs.Has(FaultVectorAddWritePastEnd),
		inputModified:     fs.Has(FaultVectorAddInputModified),
		yReadAsX:          fs.Has(FaultVectorAddYReadAsX),
		bf16AsFP16:        fs.Has(FaultVectorAddBF16AsFP16),
		castTruncates:     fs.Has(FaultVectorAddCastTruncates),
		saturatesNotInf:   fs.Has(FaultVectorAddSaturatesNotInf),
		infNotSaturated:   fs.Has(FaultVectorAddInfNotSaturated),
		subnormalsFlushed: fs.Has(FaultVectorAddSubnormalsFlushed),
		int8Wraps:         fs.Has(FaultVectorAddInt8Wraps),
		int8Clamp127:      fs.Has(FaultVectorAddInt8Clamp127),
		index16:           fs.Has(FaultVectorAddIndex16Bit),
		tiesAway:          fs.Has(FaultVectorAddTiesAwayFromZero),
		missingWait:       fs.Has(FaultVectorAddMissingWait),
		pingPongReuse:     fs.Has(FaultVectorAddPingPongReuse),
		wholeTileAdd:      fs.Has(FaultVectorAddWholeTileAdd),
	}
}

// zTarget is the z buffer the Add of a tile writes and its copy out
// reads: the one the queue handed out, or under ping-pong-reuse the
// previous tile's (prev, nil on the first tile).
func (f vectorAddFaults) zTarget(zb, prev *npu.Buffer) *npu.Buffer {
	if f.pingPongReuse && prev != nil {
		return prev
	}
	return zb
}

// addCount is how many elements the Add of a tile of cnt elements runs
// over: cnt, or the whole tile under whole-tile-add.
func (f vectorAddFaults) addCount(t VectorAddTiling, cnt int) int {
	if f.wholeTileAdd {
		return t.TileElems
	}
	return cnt
}

// share is the element range [off, off+n) core blockIdx works on, given
// the tiling's (CoreRange): one element low on every core after the first
// (core-offset-off-by-one), none for the last core
// (last-core-skipped), or short of the core's last tile
// (last-tile-skipped). n = 0 means the core has nothing to do.
func (f vectorAddFaults) share(t VectorAddTiling, blockIdx, off, n int) (int, int) {
	if f.coreOffByOne && blockIdx > 0 {
		off--
	}
	if f.lastCoreSkipped && blockIdx == t.BlockDim-1 && t.BlockDim > 1 {
		return off, 0
	}
	if f.lastTileSkipped && n > t.TileElems {
		n = (n - 1) / t.TileElems * t.TileElems
	}
	return off, n
}

// gmIndex is the GM element offset tile copies use for element g: g, or
// g mod 2^16 when the offset is held in 16 bits (index-16-bit).
func (f vectorAddFaults) gmIndex(g int) int {
	if f.index16 {
		return int(uint16(g))
	}
	return g
}

// ySource is the GM tensor the y copy-in reads: x under y-read-as-x.
func (f vectorAddFaults) ySource(x, y *tensor.Tensor) *tensor.Tensor {
	if f.yReadAsX {
		return x
	}
	return y
}

// yForAdd is the y buffer the Add of tile k reads from the y queue yq
// (one buffer per ping-pong slot): the tile's own, or from the second
// tile on the previous tile's (stale-double-buffer).
func (f vectorAddFaults) yForAdd(yq []*npu.Buffer, k int) *npu.Buffer {
	if f.staleBuffer && k > 0 {
		return yq[(k-1)%len(yq)]
	}
	return yq[k%len(yq)]
}

// addDType is the dtype the Add instruction is issued for: fp16 for bf16
// data under bf16-as-fp16.
func (f vectorAddFaults) addDType(dt tensor.DType) tensor.DType {
	if f.bf16AsFP16 && dt == tensor.BFloat16 {
		return tensor.Float16
	}
	return dt
}

// outCount is how many elements of the tile of cnt elements at GM element
// g the copy-out moves: the whole tile, its whole blocks only
// (tail-dropped), or one more for the unaligned last tile of z
// (write-past-end).
func (f vectorAddFaults) outCount(t VectorAddTiling, g, cnt, size, align int) int {
	out := cnt
	if f.tailDropped {
		out -= cnt % t.BlockElems
	}
	if f.writePastEnd && g+cnt == t.N && (cnt*size)%align != 0 {
		out++
	}
	return out
}

// afterStore runs after a tile's copy-out: under input-modified it also
// copies the tile's result over x in GM.
func (f vectorAddFaults) afterStore(c *npu.Core, x *tensor.Tensor, g int, zb *npu.Buffer, cnt int) error {
	if f.inputModified {
		return c.DataCopyPadOut(x, g, zb, cnt)
	}
	return nil
}

// convert is the fault hook of the Add's conversion step: it re-rounds
// the n sums of one Add (z = x + y, dtype dt) the way the switched-on
// rounding fault would have, and does nothing when none of those faults
// is on, or when the profile already behaves that way.
func (f vectorAddFaults) convert(c *npu.Core, dt tensor.DType, z, x, y *npu.Buffer, n int) {
	if !f.castTruncates && !f.saturatesNotInf && !f.infNotSaturated && !f.subnormalsFlushed && !f.int8Wraps && !f.int8Clamp127 && !f.tiesAway {
		return
	}
	num := c.Profile().Numerics
	if dt == tensor.Int8 {
		xs, ys, zs := x.I8()[:n], y.I8()[:n], z.I8()[:n]
		for i := range zs {
			s := int(xs[i]) + int(ys[i])
			switch {
			case f.int8Wraps:
				zs[i] = int8(s) // two's complement wrap-around
			case f.int8Clamp127:
				zs[i] = int8(max(-127, min(127, s)))
			}
		}
		return
	}
	ff, _ := dt.FloatFormat()
	var round func(z, exact func() float64) float64
	switch {
	case f.castTruncates && dt != tensor.Float32:
		// The sum of two fp16 or bf16 values is exact in float64; the
		// fault rounds it toward zero instead of to nearest.
		round = func(_, exact func() float64) float64 { return num.Round(truncate(ff, exact()), dt) }
	case f.saturatesNotInf && num.Overflow == tensor.OverflowInf:
		sat := num
		sat.Overflow = tensor.OverflowSaturate
		round = func(z, _ func() float64) float64 { return sat.Round(z(), dt) }
	case f.infNotSaturated && num.Overflow == tensor.OverflowSaturate:
		ieee := num
		ieee.Overflow = tensor.OverflowInf
		round = func(z, exact func() float64) float64 {
			if v := z(); v != 0 && math.Abs(v) != ff.MaxFinite() {
				return v // neither a saturated overflow nor a NaN mapped to 0
			}
			return ieee.Round(exact(), dt)
		}
	case f.tiesAway && dt != tensor.Int8:
		// The sum of two fp16 or bf16 values is exact in float64, and so
		// is that of two fp32 values whose exponents are close enough to
		// make a tie possible.
		round = func(z, exact func() float64) float64 { return num.Round(roundHalfAway(ff, exact()), dt) }
	case f.subnormalsFlushed && num.Subnormals == tensor.SubnormalKeep:
		ftz := num
		ftz.Subnormals = tensor.SubnormalFlush
		round = func(z, _ func() float64) float64 { return ftz.Round(z(), dt) }
	default:
		return
	}
	for i := range n {
		zi := func() float64 { return getUB(dt, z, i) }
		exact := func() float64 { return getUB(dt, x, i) + getUB(dt, y, i) }
		setUB(dt, z, i, round(zi, exact))
	}
}

// truncate rounds x toward zero in format f (RZ): never up in magnitude,
// and finite values never overflow to Inf.
func truncate(f tensor.Format, x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	q := f.Ulp(x)
	r := math.Trunc(x/q) * q
	if math.Abs(r) > f.MaxFinite() {
		r = math.Copysign(f.MaxFinite(), x)
	}
	return r
}

// roundHalfAway rounds x to format f, ties away from zero (C's round()
// at the format's precision): the nearest value when there is one, else
// the neighbour of larger magnitude, where RNE takes the even one.
func roundHalfAway(f tensor.Format, x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	q := f.Ulp(x)
	t := math.Abs(x) / q // exact: q is a power of two
	if t-math.Floor(t) != 0.5 {
		return f.RoundNearestEven(x)
	}
	return math.Copysign((math.Floor(t)+1)*q, x)
}

// getUB reads element i of a UB buffer of float dtype dt.
func getUB(dt tensor.DType, b *npu.Buffer, i int) float64 {
	switch dt {
	case tensor.Float16:
		return float64(b.F16()[i].Float32())
	case tensor.BFloat16:
		return b.BF16()[i].Float64()
	}
	return float64(b.F32()[i])
}

// setUB stores v, a value of dtype dt (or ±Inf, NaN), as element i.
func setUB(dt tensor.DType, b *npu.Buffer, i int, v float64) {
	switch dt {
	case tensor.Float16:
		b.F16()[i] = float16.Fromfloat32(float32(v))
	case tensor.BFloat16:
		b.BF16()[i] = tensor.BF16FromFloat32(float32(v))
	default:
		b.F32()[i] = float32(v)
	}
}
