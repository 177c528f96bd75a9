package verify

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// FuzzCompute holds the metrics and the verdict to their single loop on
// outputs and Expecteds decoded from the fuzzer's bytes: Compute, whole
// and streamed a block at a time, to computeSerial, every field, and
// Accepted to the single loop's count of rejected elements, for ordinary
// Expecteds (exact elements among them), compact ones (every element
// exact) and ones over an unchanged base (overridden spans among it),
// with their materialized twins.
// The op targets (./fuzz) judge a kernel's outputs by the verdict alone
// and compute the metrics only of a rejected one, so the metrics code is
// fuzzed here, against its model, on outputs no correct kernel makes.
func FuzzCompute(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0x3c, 0x00, 1, 2, 0x7c, 0x00, 3, 1, 0x00, 0x80, 0, 0})
	f.Add([]byte{1, 1, 0, 7, 0x80, 0x3f, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x7f, 0x80, 3, 5})
	f.Add([]byte{2, 0, 1, 3, 0, 0, 0x80, 0x3f, 1, 9, 0, 0, 0xc0, 0x7f, 0, 0, 0, 0, 0x80, 0xff, 3, 2})
	f.Add([]byte{3, 2, 1, 1, 0x80, 1, 200, 0x7f, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{4, 3, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	f.Add([]byte{0, 4, 0, 3, 0x00, 0x3c, 0, 1, 0, 0x00, 0x7c, 1, 2, 17, 0x01, 0x3c, 0, 2, 33, 0x00, 0xfe, 0, 5, 16})
	f.Add([]byte{4, 5, 4, 7, 5, 0, 3, 0, 7, 1, 16, 0x80, 3, 1, 2, 48, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, ok := decodeComputeCase(data)
		if !ok {
			return
		}
		serial := computeSerial(c.got, c.full)
		for k, w := range []*bound.Expected{c.want, c.full} {
			if g, s := fmt.Sprintf("%+v", Compute(c.got, w)), fmt.Sprintf("%+v", serial); g != s {
				t.Fatalf("verify Compute %s (form %d): got %s / want (single loop) %s", c, k, g, s)
			}
			bad := serial.NonFiniteMismatch + serial.OutOfBound + serial.NotRounded
			if a := Accepted(c.got, w); a != (bad == 0) {
				t.Fatalf("verify Accepted %s (form %d): got %v / want %v (%d elements rejected by the single loop)", c, k, a, bad == 0, bad)
			}
		}
		// Streamed, in blocks of c.block elements (the last shorter).
		st := NewStream(c.got)
		for off := 0; off < c.n; off += c.block {
			if err := st.Add(c.full.Window(off, min(c.block, c.n-off))); err != nil {
				t.Fatalf("verify Stream %s block=%d: Add at %d: %v", c, c.block, off, err)
			}
		}
		m, err := st.Metrics()
		if g, s := fmt.Sprintf("%+v", m), fmt.Sprintf("%+v", serial); err != nil || g != s {
			t.Fatalf("verify Stream %s block=%d: got %s, %v / want (single loop) %s", c, c.block, g, err, s)
		}
	})
}

// computeCase is one output and its Expected (want; full, its
// materialized twin, for a compact one; want itself otherwise).
type computeCase struct {
	got        *tensor.Tensor
	want, full *bound.Expected
	num        tensor.Numerics
	compact    bool
	unchanged  bool
	n          int
	block      int // the streamed blocks' length
}

func (c computeCase) String() string {
	return fmt.Sprintf("dtype=%s numerics=%s compact=%v unchanged=%v n=%d", c.got.DType, c.num, c.compact, c.unchanged, c.n)
}

// computeDTypes are the output dtypes FuzzCompute decodes.
var computeDTypes = []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64, tensor.Int8, tensor.Int32}

// decodeComputeCase reads a case from data: a header (dtype, profile,
// form, repeats) and then element records, until the bytes run out (at
// most computeMaxElems records), each record's values taken from the
// bytes as the got's bits, and a kind byte saying how the reference (or
// exact value) relates to the got: the same value, a few quarter-ulps
// away, raw float64 bits, or a special value; for an ordinary Expected a
// bound (zero, half an ulp, an ulp, NaN, +Inf, a relative one),
// alternatives, and whether the element is exact. The records repeat
// 1–8 times, so that an output spans more than one of Compute's blocks;
// the header also sets the length of the blocks a Stream is fed.
// ok is false for data too short for a header and one element.
func decodeComputeCase(data []byte) (c computeCase, ok bool) {
	if len(data) < 5 {
		return c, false
	}
	d := computeDTypes[int(data[0])%len(computeDTypes)]
	if data[1]&1 != 0 {
		c.num.Overflow = tensor.OverflowSaturate
	}
	if data[1]&2 != 0 {
		c.num.Subnormals = tensor.SubnormalFlush
	}
	// A compact Expected is what the exact ops make, in the output's
	// dtype: a floating one narrower than float64, or an integer one.
	c.compact = data[2]&1 != 0 && (bound.HasShortForm(d) || !d.IsFloat())
	// An Expected over an unchanged base (kv_update's caches): the base
	// compared by its bits outside the overridden spans.
	c.unchanged = !c.compact && data[1]&4 != 0
	repeat := 1 + int(data[3]%8)
	// The streamed blocks: from a single element to more than Compute's.
	c.block = []int{1, 3, 64, 1000, 2047, 2049, 5000}[int(data[2]>>1)%7]
	r := byteReader(data[4:])
	f, isFloat := d.FloatFormat()
	size := d.Size()

	type rec struct {
		bits      uint64
		ref, bnd  float64
		alt       bound.Special
		exact     bool
		exactOnly float64 // compact: the exact value
		// Over an unchanged base: whether the element is in an
		// overridden span (ref, bnd, alt, exact describe it), and
		// whether the base holds v rounded into d rather than got.
		override, baseV bool
		v               float64
	}
	var recs []rec
	one := tensor.MustNew(d, 1) // a record's got, as a value
	for len(r) >= size+1 && len(recs) < computeMaxElems {
		var x rec
		for k := range size {
			x.bits |= uint64(r.next()) << (8 * k)
		}
		one.SetBits(0, x.bits)
		gv := one.Float64(0)
		kind := r.next()
		ulp := 1.0
		if isFloat && !math.IsNaN(gv) && !math.IsInf(gv, 0) {
			ulp = float64(f.Ulp(gv))
		}
		var v float64
		switch kind % 4 {
		case 0:
			v = gv
		case 1:
			v = gv + float64(int8(r.next()))/4*ulp
		case 2:
			v = math.Float64frombits(r.u64())
		default:
			v = computeSpecial(d, r.next())
		}
		if c.compact {
			x.exactOnly = v
		} else {
			x.ref = v
			switch r.next() % 7 {
			case 0:
				x.bnd = 0
			case 1:
				x.bnd = ulp / 2
			case 2:
				x.bnd = ulp
			case 3:
				x.bnd = math.NaN()
			case 4:
				x.bnd = math.Inf(1)
			case 5:
				x.bnd = math.Abs(v) * 1e-3
			default:
				x.bnd = math.Ldexp(1, int(int8(r.next())))
			}
			a := r.next()
			x.alt = bound.Special(a & 7)
			x.exact = a&8 != 0
			x.override, x.baseV, x.v = a&16 != 0, a&32 != 0, v
		}
		recs = append(recs, x)
	}
	if len(recs) == 0 {
		return c, false
	}
	n := len(recs) * repeat
	c.n = n
	c.got = tensor.MustNew(d, n)
	if c.compact {
		rs := make([]float64, n)
		c.full = bound.NewExpected(n)
		for i := range n {
			x := recs[i%len(recs)]
			c.got.SetBits(i, x.bits)
			rs[i] = x.exactOnly
			c.full.SetExact(i, x.exactOnly, d, c.num)
		}
		c.want = bound.NewExactFrom(n, d, c.num, func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) })
		return c, true
	}
	if c.unchanged {
		// Two Expecteds over one base, built alike: want is read
		// through its base and spans, full is materialized.
		base := tensor.MustNew(d, n)
		for i := range n {
			x := recs[i%len(recs)]
			c.got.SetBits(i, x.bits)
			base.SetBits(i, x.bits)
			if x.baseV {
				base.SetFloat64(i, x.v, tensor.Numerics{})
			}
		}
		build := func() *bound.Expected {
			e := bound.NewUnchanged(base, c.num)
			for i := 0; i < n; {
				if !recs[i%len(recs)].override {
					i++
					continue
				}
				j := i
				for j < n && recs[j%len(recs)].override {
					j++
				}
				o, err := e.Override(i, j-i)
				if err != nil {
					panic(fmt.Sprintf("compute fuzz: disjoint spans must override: %v", err))
				}
				for k := i; k < j; k++ {
					x := recs[k%len(recs)]
					if x.exact {
						o.SetExact(k-i, x.ref, d, c.num)
					} else {
						o.Ref[k-i], o.Bound[k-i], o.Alt[k-i] = x.ref, x.bnd, x.alt
					}
				}
				i = j
			}
			return e
		}
		c.want, c.full = build(), build()
		c.full.Materialize()
		return c, true
	}
	c.want = bound.NewExpected(n)
	for i := range n {
		x := recs[i%len(recs)]
		c.got.SetBits(i, x.bits)
		if x.exact {
			c.want.SetExact(i, x.ref, d, c.num)
			continue
		}
		c.want.Ref[i], c.want.Bound[i], c.want.Alt[i] = x.ref, x.bnd, x.alt
	}
	c.full = c.want
	return c, true
}

// computeMaxElems bounds the element records of one FuzzCompute input.
const computeMaxElems = 512

// computeSpecial is special value k of dtype d:
// NaN, ±Inf, zeros of either sign, the overflow threshold and past it,
// the largest finite, subnormals, the smallest normal, a tie at 1; for an
// integer dtype its limits and one past them.
func computeSpecial(d tensor.DType, k byte) float64 {
	f, isFloat := d.FloatFormat()
	if !isFloat {
		lo, hi := d.IntRange()
		return []float64{lo, hi, lo - 1, hi + 1, 0, math.Copysign(0, -1), 0.5, math.NaN()}[k%8]
	}
	mf := f.MaxFinite()
	half := float64(f.Ulp(mf) / 2)
	return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), mf + half, -(mf + half), mf,
		f.MinSubnormal(), -3 * f.MinSubnormal(), f.MinNormal(), f.MinNormal() * 0.75, 1 + float64(f.Ulp(1)/2)}[int(k)%computeSpecials]
}

// computeSpecials is how many special values computeSpecial has for a
// floating dtype.
const computeSpecials = 13

// byteReader hands out the fuzzer's bytes, zeros once they run out.
type byteReader []byte

func (r *byteReader) next() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

func (r *byteReader) u64() uint64 {
	var b [8]byte
	for k := range b {
		b[k] = r.next()
	}
	return binary.LittleEndian.Uint64(b[:])
}
