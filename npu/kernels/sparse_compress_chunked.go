package kernels

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// sparse_compress past the UB: when a head's L scores (8 bytes a token
// with the indices) and a row buffer do not fit the Unified Buffer, the
// kernel does what an Ascend C kernel does with an intermediate too large
// for UB: it computes the importance in UB-sized chunks of tokens and
// spills the fp32 scores to a GM workspace (npu.Device.Workspace, one
// L-slice per core), then selects the top keep − sinks by a radix select
// over the scores' 32-bit order keys that only ever holds one chunk:
//
//   - four passes, one per byte of the key from the top: each streams the
//     candidates' scores back from GM chunk by chunk and builds a
//     256-bin histogram of that byte over the keys whose higher bytes
//     equal the cut's prefix found so far; a scan of the bins from the
//     top fixes the cut's next byte and how many tokens are still needed
//     inside it. After the fourth pass the cut key T is exact: every key
//     above T is kept, and `take` of the eq keys equal to T.
//   - a final pass streams the scores once more in index order and keeps
//     the sinks, every key above T and the first `take` keys equal to T
//     (ties to the lower index; a NaN's key is below every number's), so
//     the indices come out ascending; each chunk's indices and mask go to
//     GM, and the kept k and v rows are copied GM → UB → GM bit for bit.
//
// The selection is exact (the same kept set as the in-UB sort on the same
// fp32 scores), so both paths give the same bits; only the cost differs.
// The cost charges every chunk's DMA (the rows in, the scores out to the
// workspace, four histogram passes and the final pass back in, the
// indices and mask out) and a vector instruction per chunk per step (the
// squares and sum; the key map, prefix compare, digit extract and
// histogram update of each pass; the key map, two compares and the index
// gather of the final pass, and the mask), plus the bin clears and scans.

// sparseCompressFitsUB reports whether the in-UB kernel takes a head of
// l tokens of d: the score array (8 bytes a token) and one row buffer in
// the UB, each rounded to its block.
func sparseCompressFitsUB(p npu.Profile, l, d int) bool {
	a := p.UBAlign()
	return roundUpTo(l*8, a)+roundUpTo(max(d*2, 1), a) <= p.UBBytes
}

// sparseCompressChunk is the chunked path's tokens per chunk: the most
// that fit the UB with a chunk's k rows (2d bytes a token), two score
// buffers (ping-pong, 4 + 4), indices (4) and mask (1), beside the
// histogram, one row buffer and a block of rounding per buffer; a
// multiple of 32 tokens when there is room, so that every full chunk's
// copies are whole UB blocks.
func sparseCompressChunk(p npu.Profile, d int) int {
	a := p.UBAlign()
	free := p.UBBytes - scHistBins*4 - roundUpTo(max(d*2, 1), a) - 5*a
	c := free / (2*d + 13)
	if c >= 32 {
		c = c / 32 * 32
	}
	return max(c, 1)
}

// scLongChunk is the token chunk of the long-row layout (scores, indices
// and mask), whose rows go through the UB in pieces.
const scLongChunk = 32

// sparseCompressPiece is how many elements of a row the chunked path
// holds in UB at a time: all d when one token's row fits beside a row
// buffer, the scores, indices, mask and histogram (the layout above);
// else a head's rows are too long for the UB and are streamed in pieces
// (Ascend C's tiling of the D axis): a row buffer of the returned
// elements, the most that fit beside scLongChunk tokens of scores,
// indices and mask and the histogram, in whole UB blocks. A UB that holds
// no piece is an error naming ub_bytes.
func sparseCompressPiece(p npu.Profile, d int) (int, error) {
	a := p.UBAlign()
	if p.UBBytes-scHistBins*4-roundUpTo(max(d*2, 1), a)-4*a >= 2*d+9 {
		return max(d, 1), nil
	}
	need := scHistBins*4 + roundUpTo(scLongChunk*4, a)*2 + roundUpTo(scLongChunk, a)
	piece := roundDown((p.UBBytes-need)/2, a) / 2 // elements: fp16, whole blocks
	if piece < 1 {
		return 0, fmt.Errorf("sparse_compress: the chunked path needs more than %d bytes of UB (histogram, %d tokens of scores, indices and mask, one row piece); ub_bytes is %d",
			need, scLongChunk, p.UBBytes)
	}
	return min(piece, d), nil
}

func roundUpTo(n, m int) int { return (n + m - 1) / m * m }

// scHistBins is the radix select's histogram: one byte of the key a pass.
const scHistBins = 256

// scChunked is one core's chunked sparse_compress: its UB buffers and its
// slice of the GM score workspace.
type scChunked struct {
	c                    *npu.Core
	f                    sparseCompressFaults
	k, v, ws             *tensor.Tensor
	outs                 map[string]*tensor.Tensor
	h, l, d, keep, sinks int
	chunk, wsOff         int
	piece                int // row elements per UB copy: d, or less for rows longer than the UB holds
	pairwise             bool
	xs                   []float32 // long rows: one piece's squares
	rows                 [2]*npu.Buffer
	scores               [2]*npu.Buffer
	idx, mask, hist, row *npu.Buffer
	nRows, nScores       int // buffers of rows and scores: 2 (ping-pong) where the UB holds them
	q, qs                int // the rows and scores buffers the next fill takes
	e                    *pipeFlags
	// The final pass copies the kept rows in blocks (scMergeJoins) of at
	// most blkRows rows (a rows buffer's chunk; 1 in the long-row layout)
	// skipping fewer than gapMax rows between kept ones (scMergeGap; 1,
	// runs of consecutive tokens only, in the long-row layout or where
	// no gap pays).
	blkRows, gapMax int
}

// Event ids of the chunked path's buffers (pipeFlags): rows and scores
// take their slot's id plus these.
const (
	scIDRows   = 0
	scIDScores = 2
	scIDIdx    = 4
	scIDMask   = 5
	scIDRow    = 6
)

// newSCChunked allocates the core's UB buffers; the UB's capacity errors
// say which does not fit.
// A piece less than d selects the long-row layout (sparseCompressPiece):
// no chunk of k rows, and every row streamed through the row buffer.
func newSCChunked(c *npu.Core, f sparseCompressFaults, k, v, ws *tensor.Tensor, outs map[string]*tensor.Tensor, keep, sinks, chunk, piece, bufNum int, pairwise bool) (*scChunked, error) {
	h, l, d := k.Shape[0], k.Shape[1], k.Shape[2]
	s := &scChunked{c: c, f: f, k: k, v: v, ws: ws, outs: outs, h: h, l: l, d: d, keep: keep, sinks: sinks,
		chunk: chunk, wsOff: c.BlockIdx * l, piece: min(piece, d), pairwise: pairwise, nRows: 1, nScores: 1, e: &pipeFlags{c: c}}
	rowsBytes := chunk * d * 2
	if s.piece < d {
		s.xs = make([]float32, s.piece)
		rowsBytes = -1 // no chunk of rows: they stream through s.row
	}
	for _, b := range []struct {
		buf   **npu.Buffer
		bytes int
		what  string
	}{
		{&s.rows[0], rowsBytes, "k rows"}, {&s.scores[0], chunk * 4, "scores"}, {&s.idx, chunk * 4, "indices"},
		{&s.mask, chunk, "mask"}, {&s.hist, scHistBins * 4, "histogram"}, {&s.row, max(s.piece*2, 1), "row"},
	} {
		if b.bytes < 0 {
			continue
		}
		buf, err := c.AllocUB(b.bytes)
		if err != nil {
			return nil, fmt.Errorf("chunk of %d tokens (D=%d): %s: %w", chunk, d, b.what, err)
		}
		*b.buf = buf
	}
	// The second score buffer (sparseCompressChunk leaves room for it at
	// the default chunk), then the second rows buffer where the UB still
	// holds it: ping-pong; else that buffer is single.
	a := c.Profile().UBAlign()
	fits := func(n int) bool { return n > 0 && c.Used(npu.UB)+roundUpTo(n, a) <= c.Profile().UBBytes }
	if bufNum > 1 && fits(chunk*4) {
		b, err := c.AllocUB(chunk * 4)
		if err != nil {
			return nil, err
		}
		s.scores[1], s.nScores = b, 2
	}
	if bufNum > 1 && rowsBytes > 0 && fits(rowsBytes) {
		b, err := c.AllocUB(rowsBytes)
		if err != nil {
			return nil, err
		}
		s.rows[1], s.nRows = b, 2
	}
	s.blkRows, s.gapMax = 1, 1
	if s.piece == d {
		s.blkRows, s.gapMax = chunk, scMergeGap(c.Profile(), max(d*2, 1))
	}
	if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
		return nil, err
	}
	if err := c.SetBufferNum(max(s.nRows, s.nScores)); err != nil {
		return nil, err
	}
	return s, nil
}

// fillScores takes the next score buffer for pipe p to write (V in the
// importance pass, MTE2 reading the workspace back): its last reader
// handed it back. It returns the buffer and its event id.
func (s *scChunked) fillScores(p npu.Pipe) (*npu.Buffer, int) {
	q := s.qs
	s.qs = (s.qs + 1) % s.nScores
	id := scIDScores + q
	s.fill(p, id)
	return s.scores[q], id
}

// fillRows takes the next rows buffer for MTE2 (importance's copy in, or
// a block of kept rows in the final pass) and returns it and its event id.
func (s *scChunked) fillRows() (*npu.Buffer, int) {
	q := s.q
	s.q = (s.q + 1) % s.nRows
	s.fill(npu.PipeMTE2, scIDRows+q)
	return s.rows[q], scIDRows + q
}

// fill makes pipe p, about to overwrite buffer id, take the free events
// its readers on the other pipes set.
func (s *scChunked) fill(p npu.Pipe, id int) {
	for _, r := range []npu.Pipe{npu.PipeMTE2, npu.PipeV, npu.PipeMTE3} {
		if r != p {
			s.e.take(r, p, id)
		}
	}
}

// head runs head hh: importance to the workspace, the cut, the final pass.
func (s *scChunked) head(hh int) error {
	c, l, d, e := s.c, s.l, s.d, s.e
	for t0 := 0; t0 < l; t0 += s.chunk {
		n := min(s.chunk, l-t0)
		sb, sid := s.fillScores(npu.PipeV)
		if s.piece < d {
			for t := range n {
				sc, err := s.longImportance((hh*l + t0 + t) * d)
				if err != nil {
					return err
				}
				sb.F32()[t] = sc
			}
		} else {
			rb, rid := s.fillRows()
			if err := c.DataCopyPadIn(rb, s.k, (hh*l+t0)*d, n*d); err != nil {
				return err
			}
			e.handOff(npu.PipeMTE2, npu.PipeV, rid)
			sc, rows := sb.F32(), rb.F16()
			for t := range n {
				sc[t] = importance32(s.f, rows[t*d:(t+1)*d], s.pairwise)
			}
			c.VectorWork(n * d * 4 * 2)
			e.set(npu.PipeV, npu.PipeMTE2, rid)
		}
		e.handOff(npu.PipeV, npu.PipeMTE3, sid)
		if err := c.DataCopyPadOut(s.ws, s.wsOff+t0, sb, n); err != nil {
			return err
		}
		e.set(npu.PipeMTE3, npu.PipeV, sid)
	}
	e.phase() // the scores are in the workspace; the radix reads them back
	res := s.f.reservedSinks(min(s.sinks, l), s.keep, l)
	need := s.keep - res
	if need == 0 || need == l-res {
		// Nothing or everything of the candidates is kept: no cut.
		all := need > 0
		return s.final(hh, res, func(uint32) int { return b2i(all) }, false)
	}
	cut, take, eq, err := s.radix(res, need)
	if err != nil {
		return err
	}
	skip := s.f.tieSkip(eq, take, cut == s.f.selectKey(float32(math.NaN())))
	seen := 0
	return s.final(hh, res, func(key uint32) int {
		switch {
		case key > cut:
			return 1
		case key == cut:
			seen++
			return b2i(seen > skip && seen <= skip+take)
		}
		return 0
	}, true)
}

// longImportance is importance32 of the row at element off of k, read
// through the row buffer a piece at a time: the squares of each piece
// added to one fp32 sum that runs on across the pieces (in order, the
// same bits as importance32 on the whole row; pairwise within a piece),
// then the mean.
func (s *scChunked) longImportance(off int) (float32, error) {
	c, d := s.c, s.d
	var sum float32
	for j0 := 0; j0 < d; j0 += s.piece {
		n := min(s.piece, d-j0)
		s.fill(npu.PipeMTE2, scIDRow)
		if err := c.DataCopyPadIn(s.row, s.k, off+j0, n); err != nil {
			return 0, err
		}
		s.e.handOff(npu.PipeMTE2, npu.PipeV, scIDRow)
		xs := s.xs[:n]
		for j, x := range s.row.F16()[:n] {
			xs[j] = s.f.square(x.Float32())
		}
		switch {
		case s.f.fp16Accum:
			sum = s.f.fp16SumFrom(sum, xs)
		case s.pairwise:
			sum += pairSum(xs)
		default:
			for _, x := range xs {
				sum += x
			}
		}
		c.VectorWork(n * 4 * 2)
		s.e.set(npu.PipeV, npu.PipeMTE2, scIDRow)
	}
	return sum / float32(d), nil
}

// copyRow copies the d elements of a row from src at element so to dst
// at element do through buf, piece elements at a time (one copy when a
// row fits buf), synchronised on its own: every pipe done before each
// copy in, the copy in handed to MTE3, every pipe done after. The
// kernels copy through s.copyRow, which overlaps; this one is the
// k-compacted-in-place fault's.
func copyRow(c *npu.Core, buf *npu.Buffer, piece int, src *tensor.Tensor, so int, dst *tensor.Tensor, do, d int) error {
	for j0 := 0; j0 < d; j0 += piece {
		n := min(piece, d-j0)
		c.PipeBarrier(npu.PipeAll)
		if err := c.DataCopyPadIn(buf, src, so+j0, n); err != nil {
			return err
		}
		c.SetFlag(npu.PipeMTE2, npu.PipeMTE3, scIDRow)
		c.WaitFlag(npu.PipeMTE2, npu.PipeMTE3, scIDRow)
		if err := c.DataCopyPadOut(dst, do+j0, buf, n); err != nil {
			return err
		}
	}
	c.PipeBarrier(npu.PipeAll)
	return nil
}

// copyRow copies a row as copyRow does, through the row buffer, its copy
// in after the last copy out of the buffer (a free event) and handed to
// MTE3, so copies of consecutive rows overlap their stores.
func (s *scChunked) copyRow(src *tensor.Tensor, so int, dst *tensor.Tensor, do int) error {
	c, e := s.c, s.e
	for j0 := 0; j0 < s.d; j0 += s.piece {
		n := min(s.piece, s.d-j0)
		s.fill(npu.PipeMTE2, scIDRow)
		if err := c.DataCopyPadIn(s.row, src, so+j0, n); err != nil {
			return err
		}
		e.handOff(npu.PipeMTE2, npu.PipeMTE3, scIDRow)
		if err := c.DataCopyPadOut(dst, do+j0, s.row, n); err != nil {
			return err
		}
		e.set(npu.PipeMTE3, npu.PipeMTE2, scIDRow)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// radix finds the cut key among the candidates [res, L): the key T such
// that fewer than need keys exceed it and at least need reach it, with
// take = need − #(keys > T) and eq = #(keys == T).
func (s *scChunked) radix(res, need int) (cut uint32, take, eq int, err error) {
	c, l := s.c, s.l
	take = need
	for shift := 24; shift >= 0; shift -= 8 {
		hist := s.hist.I32()[:scHistBins]
		clear(hist)
		c.VectorWork(scHistBins * 4)
		for t0 := res; t0 < l; t0 += s.chunk {
			n := min(s.chunk, l-t0)
			sb, sid := s.fillScores(npu.PipeMTE2)
			if err := c.DataCopyPadIn(sb, s.ws, s.wsOff+t0, n); err != nil {
				return 0, 0, 0, err
			}
			s.e.handOff(npu.PipeMTE2, npu.PipeV, sid)
			for _, x := range sb.F32()[:n] {
				key := s.f.selectKey(x)
				if shift < 24 && key>>(shift+8) != cut>>(shift+8) {
					continue
				}
				hist[key>>shift&0xff]++
			}
			for range 4 { // key map, prefix compare, digit extract, histogram update
				c.VectorWork(n * 4)
			}
			s.e.set(npu.PipeV, npu.PipeMTE2, sid)
		}
		_ = s.hist.I32() // the scan's operand
		b := scHistBins - 1
		for ; b > 0 && int(hist[b]) < take; b-- {
			take -= int(hist[b])
		}
		cut |= uint32(b) << shift
		eq = int(hist[b])
		c.VectorWork(scHistBins * 4)
		// The cut is the next pass's compare operand and the final
		// pass's: the scalar reads the scan's result once V signalled.
		if err := scalarAfterV(c, s.f, s.hist, 0, scHistBins*4); err != nil {
			return 0, 0, 0, err
		}
	}
	return cut, take, eq, nil
}

// final streams the tokens in index order: the first res are kept, a
// candidate when kept(key) is 1 (its score is read back from the
// workspace only when scored). Indices and mask leave a chunk at a time;
// kept rows are copied in merged blocks (scMergeJoins, copyBlock).
func (s *scChunked) final(hh, res int, kept func(uint32) int, scored bool) error {
	c, l, d, e := s.c, s.l, s.d, s.e
	indices, mask := s.outs["indices"], s.outs["mask"]
	src := s.f.kSourceHead(hh, s.h)
	oh := s.f.outHead(hh, c.BlockIdx)
	out, pending, carry := 0, 0, false
	// The kept rows not yet copied: one open block (scMergeJoins), and
	// whether it has gaps.
	var blk []int
	gaps := false
	flush := func() error {
		if pending == 0 {
			return nil
		}
		e.handOff(npu.PipeS, npu.PipeMTE3, scIDIdx)
		err := c.DataCopyPadOut(indices, oh*s.keep+out-pending, s.idx, pending)
		e.set(npu.PipeMTE3, npu.PipeS, scIDIdx)
		pending = 0
		return err
	}
	for t0 := 0; t0 < l; t0 += s.chunk {
		n := min(s.chunk, l-t0)
		var sb *npu.Buffer
		sid := 0
		if scored && t0+n > res {
			lo := max(t0, res)
			sb, sid = s.fillScores(npu.PipeMTE2)
			if err := c.DataCopyPadIn(sb, s.ws, s.wsOff+lo, t0+n-lo); err != nil {
				return err
			}
			e.handOff(npu.PipeMTE2, npu.PipeV, sid)
			_ = sb.F32()  // the operand of the four instructions
			for range 4 { // key map, compare > cut, compare == cut, index gather
				c.VectorWork((t0 + n - lo) * 4)
			}
			// Which tokens are kept decides the kept rows' copies: the
			// scalar reads the compares' results once V signalled.
			if err := scalarAfterV(c, s.f, sb, 0, (t0+n-lo)*4); err != nil {
				return err
			}
		}
		// V clears the chunk's mask once its last store read it; the
		// scalar sets the kept tokens' bytes once V signalled (a V → S
		// event of its own, just before the first: a chunk that keeps
		// nothing waits for nothing).
		e.take(npu.PipeMTE3, npu.PipeV, scIDMask)
		clear(s.mask.U8()[:n])
		c.VectorWork(n)
		synced := false
		setMask := func(i int) error {
			if !synced {
				c.SetFlag(npu.PipeV, npu.PipeS, scIDScalar)
				c.WaitFlag(npu.PipeV, npu.PipeS, scIDScalar)
				synced = true
			}
			if err := c.ScalarWrite(s.mask, i, 1); err != nil {
				return err
			}
			s.mask.U8()[i] = 1
			return nil
		}
		if carry {
			if err := setMask(0); err != nil {
				return err
			}
			carry = false
		}
		for t := t0; t < t0+n; t++ {
			keep := t < res
			if !keep {
				key := uint32(0)
				if scored {
					key = s.f.selectKey(sb.F32()[t-max(t0, res)])
				}
				keep = kept(key) == 1
			}
			if !keep {
				continue
			}
			if mi := s.f.maskIndex(t, l); mi < t0+n {
				if err := setMask(mi - t0); err != nil {
					return err
				}
			} else {
				carry = true
			}
			// The scalar writes the kept index (SetValue) once the last
			// store of the indices read the buffer (MTE3 → S).
			if pending == 0 {
				e.take(npu.PipeMTE3, npu.PipeS, scIDIdx)
			}
			if err := c.ScalarWrite(s.idx, pending*4, 4); err != nil {
				return err
			}
			s.idx.I32()[pending] = int32(t)
			pending++
			out++
			joins := false
			if len(blk) > 0 {
				joins, gaps = scMergeJoins(blk[0], blk[len(blk)-1], t, len(blk), gaps, s.blkRows, s.blkRows, s.gapMax)
			}
			if !joins {
				if err := s.copyBlock(blk, out-1-len(blk), hh, src, oh); err != nil {
					return err
				}
				blk, gaps = blk[:0], false
			}
			blk = append(blk, t)
			if pending == s.chunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if sb != nil {
			e.set(npu.PipeV, npu.PipeMTE2, sid)
		}
		e.handOff(npu.PipeV, npu.PipeMTE3, scIDMask)
		e.handOff(npu.PipeS, npu.PipeMTE3, scIDMask)
		if err := c.DataCopyPadOut(mask, oh*l+t0, s.mask, n); err != nil {
			return err
		}
		e.set(npu.PipeMTE3, npu.PipeV, scIDMask)
	}
	if err := s.copyBlock(blk, out-len(blk), hh, src, oh); err != nil {
		return err
	}
	if out != s.keep {
		return fmt.Errorf("head %d: selected %d tokens, want keep=%d", hh, out, s.keep)
	}
	if err := flush(); err != nil {
		return err
	}
	return s.f.compactK(c, s.k, s.outs["k_out"], s.row, s.piece, hh, oh, l, s.keep, d)
}

// copyBlock copies the k and v rows of the block of kept tokens blk
// (ascending, output rows from out) GM → UB → GM: through the next rows
// buffer (scCopyBlock; ping-pong: the next block's copy in overlaps this
// one's gather and copy out), a block with gaps gathered in place (V
// moves each kept row down to its place, rows in ascending order, so
// none is overwritten before it is read); in the long-row layout a
// block is one row, copied through the row buffer a piece at a time.
func (s *scChunked) copyBlock(blk []int, out, hh, src, oh int) error {
	if len(blk) == 0 {
		return nil
	}
	l, d := s.l, s.d
	for _, kv := range []struct {
		in  *tensor.Tensor
		out string
		hd  int
	}{{s.k, "k_out", src}, {s.v, "v_out", hh}} {
		so, do := (kv.hd*l+blk[0])*d, (oh*s.keep+out)*d
		if s.piece < d {
			if err := s.copyRow(kv.in, so, s.outs[kv.out], do); err != nil {
				return err
			}
			continue
		}
		rb, rid := s.fillRows()
		if err := scCopyBlock(s.c, s.e, blk, d, kv.in, so, s.outs[kv.out], do, rb, rid, rb, rid); err != nil {
			return err
		}
	}
	return nil
}
