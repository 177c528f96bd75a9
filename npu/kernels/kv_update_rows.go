package kernels

// kv_update's core layout (how the cube's slots and panels fit L1, L0 and
// UB) and its row arithmetic: the fp32 accumulation of a projected row,
// its rounding to fp16 and its int8 quantisation.

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// kvLayout is a kv_update block's tiling of its 1×D by D×D products on
// the profile's fp16 fractal fr: nb ping-pong slots per stage (1 or 2),
// n-tiles of nt columns (one L0C accumulator tile each, a multiple of
// fr.N) and k-panels of kp rows (one L1 panel each, a multiple of fr.K);
// the x row is the first of fr.M rows (the rest zero) and each Mmad
// multiplies one fr.K slice of k.
// xe is the rows of the entry's x tile (H rounded up to fr.M), loaded
// once per batch entry, or 0 where nb of them would take more than a
// quarter of L1: then each k-panel of w comes with its slice of x[b,h].
type kvLayout struct {
	nb, nt, kp, xe int
	fr             npu.Fractal
}

// kvEvEntryX is the first event id of the entry x tiles' slots on the
// MTE2/MTE1 pair (the panels' slots take 0 and 1).
const kvEvEntryX = 2

// kvEvScalar is the event id of the scalar's events: V → S, a row's
// amax (kvQuantise), and MTE3 → S, the flag buffer's store done before
// the scalar writes it again.
const kvEvScalar = 0

// kvCubeLayout tiles a block for D = d: with bufNum 2 (the default) two
// copies per stage, else one, and one where a memory cannot hold two
// copies of the smallest tiles. An n-tile is as wide as L0C (fr.M fp32
// rows), L0B (an fr.K-row slice), UB (its fp32 copy beside the output
// rows) and L1 (an fr.K-row panel beside the x tile) allow, up to all of
// D; a k-panel as deep as L1 holds beside the x tile, up to all of D. A
// core that cannot hold the output rows and the smallest tiles is an error
// "<field>: <bytes> cannot hold one tile of kv_update (needs N)".
func kvCubeLayout(prof npu.Profile, d, h, bufNum int) (kvLayout, error) {
	fr, al, ubAlign := prof.CubeFP16, prof.Align, prof.UBAlign()
	// slot is the bytes one of nb aligned copies may take of a memory.
	slot := func(capacity, align, nb int) int { return capacity / nb / align * align }
	aBytes := roundUp(fr.M*fr.K*2, al.L0A)
	var err error
	for nb := max(bufNum, 1); nb >= 1; nb-- {
		ubFree := prof.UBBytes - nb*kvUBRows(prof, d) - ubAlign
		xe, xm := roundUp(h, fr.M), 0 // entry x tile rows; x rows beside each panel
		xeBytes := roundUp(xe*roundUp(d, fr.K)*2, al.L1)
		if nb*xeBytes > prof.L1Bytes/4 {
			xe, xeBytes, xm = 0, 0, fr.M
		}
		l1 := slot(prof.L1Bytes-nb*xeBytes, al.L1, nb) - 2*al.L1 // a panel and its x tile, each rounded up
		nt := min(roundUp(d, fr.N), slot(prof.L0BBytes, al.L0B, nb)/(fr.K*2), slot(prof.L0CBytes, al.L0C, nb)/(fr.M*4),
			max(ubFree, 0)/nb/ubAlign*ubAlign/4, max(l1, 0)/(fr.K*2)-xm) / fr.N * fr.N
		switch {
		case nb*aBytes > prof.L0ABytes:
			err = kvShort("l0a_bytes", prof.L0ABytes, aBytes)
		case slot(prof.L0BBytes, al.L0B, nb) < fr.K*fr.N*2:
			err = kvShort("l0b_bytes", prof.L0BBytes, roundUp(fr.K*fr.N*2, al.L0B))
		case slot(prof.L0CBytes, al.L0C, nb) < fr.M*fr.N*4:
			err = kvShort("l0c_bytes", prof.L0CBytes, roundUp(fr.M*fr.N*4, al.L0C))
		case ubFree/nb/ubAlign*ubAlign < fr.N*4:
			err = kvShort("ub_bytes", prof.UBBytes, kvUBRows(prof, d)+ubAlign+roundUp(fr.N*4, ubAlign))
		case nt < fr.N:
			err = kvShort("l1_bytes", prof.L1Bytes, roundUp(fr.M*fr.K*2, al.L1)+roundUp(fr.K*fr.N*2, al.L1))
		default:
			kp := min(roundUp(d, fr.K), l1/((xm+nt)*2)) / fr.K * fr.K
			return kvLayout{nb: nb, nt: nt, kp: kp, xe: xe, fr: fr}, nil
		}
	}
	return kvLayout{}, err
}

// kvShort is the error for a memory (its profile field) of capacity bytes
// that cannot hold kv_update's smallest tiles, which need bytes.
func kvShort(field string, capacity, need int) error {
	return fmt.Errorf("%s: %d cannot hold one tile of kv_update (needs %d)", field, capacity, need)
}

// kvNames names a projection's weight, its new rows, its cache and its
// int8 scales.
type kvNames struct{ w, newName, cache, scale string }

// kvRoundRow rounds the fp32 accumulators of one projected row to fp16
// into out, as kvRound does, charging only the vector instruction (the
// cube's Mmads charge themselves).
func kvRoundRow(c *npu.Core, acc []float32, out []float16.Float16) {
	num := c.Profile().Numerics
	for j, a := range acc {
		out[j] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(a)), tensor.Float16))) // a NaN sum: the default NaN
	}
	c.ChargeVector(len(acc) * 4)
}

// kvUBRows is the UB a kv_update block holds besides its accumulator
// tiles, per ping-pong slot: the fp16 output row (2·D bytes), the int8 row
// (D) and one block for a scale, each rounded to the UB alignment; and
// once, one block for a seq_len or flag.
func kvUBRows(prof npu.Profile, d int) int {
	align := prof.UBAlign()
	return roundUp(d*2, align) + roundUp(d, align) + align
}

// kvProject is the 1×D by D×D product as the host computes it, in one
// panel: kvAccumulate over all of w, then kvRound. The kernel runs the
// product on the cube (Mmad's sequential fp32 model, the same bits);
// TestKernelArithmeticNaNDefault holds this form to the default NaN.
func kvProject(c *npu.Core, acc, wf []float32, x, w, out []float16.Float16) {
	clear(acc)
	kvAccumulate(acc, wf, x, w)
	kvRound(c, acc, out)
}

// kvAccumulate adds the rows of one k-panel of w (len(x) rows of
// len(acc) columns) times x into acc: one fp32 accumulator per output
// column, k ascending (fp16 products are exact in fp32, so
// multiply-then-add rounds as the fused step). wf is scratch for the
// panel widened to fp32, all at once (exact: the values the products
// read one at a time).
func kvAccumulate(acc, wf []float32, x, w []float16.Float16) {
	d := len(acc)
	wf = wf[:len(w)]
	tensor.F16ToF32s(wf, w)
	for i, xi := range x {
		xv := xi.Float32()
		row := wf[i*d : (i+1)*d]
		for j, wv := range row {
			acc[j] += float32(xv * wv) // converted: rounds on its own (exact), never fused
		}
	}
}

// kvRound is the fp16 cast of the accumulators into out, and charges the
// whole 1×D by D×D product (one cube product however many panels fed
// it) and the cast.
func kvRound(c *npu.Core, acc []float32, out []float16.Float16) {
	d := len(acc)
	c.ChargeCube(1, d, d, true)
	kvRoundRow(c, acc, out)
}

// kvQuantise is the vector unit's symmetric per-row int8 quantisation of
// one fp16 row, in fp32: Abs and ReduceMax, one divide by 127 for the
// scale, Div of the row by the scale, Cast to int8 with the profile's
// rounding, clamped to ±127. An all-zero row gives scale 0 and codes 0.
// The scale is the scalar unit's: it reads the ReduceMax result (the
// first bytes of red, the row's buffer, the reduce's operand) after a
// V → S event (Ascend C's GetValue after WaitFlag<HardEvent::V_S>),
// branches on it and divides; nothing after that is issued before the
// reduce ends. A nil red (a unit test on host slices) reads nothing.
func kvQuantise(c *npu.Core, num tensor.Numerics, v []float16.Float16, q []int8, red *npu.Buffer) (float32, error) {
	var amax float32
	for _, x := range v {
		amax = max(amax, float32(math.Abs(float64(x.Float32()))))
	}
	c.ChargeVector(len(v) * 2) // abs + reduce max
	if red != nil {
		c.SetFlag(npu.PipeV, npu.PipeS, kvEvScalar)
		c.WaitFlag(npu.PipeV, npu.PipeS, kvEvScalar)
		if err := c.ScalarRead(red, 0, min(2, red.Len())); err != nil {
			return 0, fmt.Errorf("kv_update: the row's amax: %w", err)
		}
	}
	if amax == 0 {
		clear(q)
		return 0, nil
	}
	sc := npu.CanonNaN(amax / 127) // a NaN in the row: the default NaN scale
	for i, x := range v {
		r := num.Round(float64(x.Float32()/sc), tensor.Int8)
		q[i] = int8(max(-127, min(127, r)))
	}
	c.ChargeVector(len(v) * 4) // divide
	c.ChargeVector(len(v) * 4) // cast to int8
	return sc, nil
}
