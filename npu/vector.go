package npu

import (
	"fmt"
	"sync"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// Vector primitives work elementwise on the first n elements of UB
// buffers of one dtype: fp16, bf16, fp32 or int8. Floating operations
// compute in fp32 and round once to the dtype (round to nearest even),
// then apply the profile's numerics: under saturate, ±Inf becomes ±max
// and NaN becomes +0; under flush, a subnormal result becomes a zero of
// its sign. For fp16 and bf16 the fp32 step is exact or correctly rounded,
// and since fp32 has p' = 24 ≥ 2p+2 bits (p = 11, 8), rounding the fp32
// result to the dtype equals rounding the exact result (the
// double-rounding theorem): the output is tensor.Numerics.Round of the
// exact value. A NaN result is the format's default NaN whatever the
// operands' payloads (nan.go); saturate then maps it to +0 as any NaN.
// int8 arithmetic saturates to [−128, 127].
//
// Each instruction costs VectorIssueCycles + ceil(n·size / 256) cycles
// (256 = VectorBytesPerCycle on ascend910b), one instruction on pipe V. dst may alias a source. The bytes each reads from
// UB (its sources; a fill reads none) count in UBReadBytes
// (Cost.UBReuse).

type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
)

var binOpNames = [...]string{opAdd: "Add", opSub: "Sub", opMul: "Mul"}

// Add sets dst[i] = a[i] + b[i] for i < n.
func (c *Core) Add(dt tensor.DType, dst, a, b *Buffer, n int) error {
	return c.binary(opAdd, dt, dst, a, b, n)
}

// Sub sets dst[i] = a[i] − b[i] for i < n.
func (c *Core) Sub(dt tensor.DType, dst, a, b *Buffer, n int) error {
	return c.binary(opSub, dt, dst, a, b, n)
}

// Mul sets dst[i] = a[i] · b[i] for i < n. Products of fp16 or bf16 values
// are exact in fp32, so the result is correctly rounded.
func (c *Core) Mul(dt tensor.DType, dst, a, b *Buffer, n int) error {
	return c.binary(opMul, dt, dst, a, b, n)
}

func vectorDType(op string, dt tensor.DType) error {
	switch dt {
	case tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8:
		return nil
	}
	return fmt.Errorf("%s: dtype %s not supported by the vector unit (want fp16, bf16, fp32 or int8)", op, dt)
}

func (c *Core) binary(op binOp, dt tensor.DType, dst, a, b *Buffer, n int) error {
	name := binOpNames[op]
	if err := vectorDType(name, dt); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%s: negative count %d", name, n)
	}
	bytes := n * dt.Size()
	for _, x := range []struct {
		what string
		b    *Buffer
	}{{"dst", dst}, {"src0", a}, {"src1", b}} {
		if err := c.checkBufOp(name, x.what, x.b, UB, bytes); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	num := c.prof.Numerics
	switch dt {
	case tensor.Float16:
		binF16(op, dst.f16()[:n], a.f16()[:n], b.f16()[:n])
		fixF16(dst.f16()[:n], num)
	case tensor.BFloat16:
		binBF16(op, dst.bf16()[:n], a.bf16()[:n], b.bf16()[:n])
		fixBF16(dst.bf16()[:n], num)
	case tensor.Float32:
		binF32(op, dst.f32()[:n], a.f32()[:n], b.f32()[:n])
		fixF32(dst.f32()[:n], num)
	case tensor.Int8:
		binI8(op, dst.i8()[:n], a.i8()[:n], b.i8()[:n])
	}
	c.issue(PipeV, name, c.vectorCycles(bytes), gmAccess{}, rd(a, 0, bytes), rd(b, 0, bytes), wr(dst, 0, bytes))
	c.readUB(2 * bytes) // both sources, even when they alias
	return nil
}

// f16Table maps every fp16 bit pattern to its exact fp32 value.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
})

// binF16Go is binF16 in portable Go: the fp16 operands by table, the
// fp32 results rounded in one pass by f32sToF16.
func binF16Go(op binOp, z, a, b []float16.Float16) {
	t := f16Table()
	var tmp [512]float32 // fp32 results of one chunk, then rounded in one pass
	for len(z) > 0 {
		s := tmp[:min(len(z), len(tmp))]
		a0, b0 := a[:len(s)], b[:len(s)]
		switch op {
		case opAdd:
			for i := range s {
				s[i] = t[a0[i]] + t[b0[i]]
			}
		case opSub:
			for i := range s {
				s[i] = t[a0[i]] - t[b0[i]]
			}
		case opMul:
			for i := range s {
				s[i] = t[a0[i]] * t[b0[i]]
			}
		}
		f32sToF16(z[:len(s)], s, true) // NaN → default NaN (nan.go)
		z, a, b = z[len(s):], a[len(s):], b[len(s):]
	}
}

// binBF16Go is binBF16 in portable Go: each result computed in fp32 and
// rounded to bf16 ties to even, a NaN to the default NaN.
func binBF16Go(op binOp, z, a, b []tensor.BF16) {
	b = b[:len(z)]
	a = a[:len(z)]
	switch op {
	case opAdd:
		for i := range z {
			z[i] = bf16Result(a[i].Float32() + b[i].Float32())
		}
	case opSub:
		for i := range z {
			z[i] = bf16Result(a[i].Float32() - b[i].Float32())
		}
	case opMul:
		for i := range z {
			z[i] = bf16Result(a[i].Float32() * b[i].Float32())
		}
	}
}

// bf16Result rounds the fp32 result of an arithmetic operation to bf16, a
// NaN to the default NaN (nan.go).
func bf16Result(r float32) tensor.BF16 {
	if r != r {
		return DefaultNaNBF16Bits
	}
	return tensor.BF16FromFloat32(r)
}

// binF32Go computes the fp32 op; a NaN result becomes the default NaN
// (nan.go), one well-predicted compare per element. binF32 is it, eight
// at a time where the CPU allows.
func binF32Go(op binOp, z, a, b []float32) {
	b = b[:len(z)]
	a = a[:len(z)]
	switch op {
	case opAdd:
		for i := range z {
			r := a[i] + b[i]
			if r != r {
				r = defaultNaN32
			}
			z[i] = r
		}
	case opSub:
		for i := range z {
			r := a[i] - b[i]
			if r != r {
				r = defaultNaN32
			}
			z[i] = r
		}
	case opMul:
		for i := range z {
			r := a[i] * b[i]
			if r != r {
				r = defaultNaN32
			}
			z[i] = r
		}
	}
}

func sat8(v int16) int8 { return int8(max(-128, min(127, v))) }

func binI8(op binOp, z, a, b []int8) {
	b = b[:len(z)]
	a = a[:len(z)]
	switch op {
	case opAdd:
		for i := range z {
			z[i] = sat8(int16(a[i]) + int16(b[i]))
		}
	case opSub:
		for i := range z {
			z[i] = sat8(int16(a[i]) - int16(b[i]))
		}
	case opMul:
		for i := range z {
			z[i] = sat8(int16(a[i]) * int16(b[i]))
		}
	}
}

// fixBits applies saturate and flush to IEEE bit patterns already rounded
// to their format: exp and frac are the field masks, maxFinite the largest
// finite pattern. It matches tensor.Numerics.Round on the rounded value.
// The patterns go through fixBitsVec (AVX2, many at a time) where the CPU
// allows, the rest one at a time here.
func fixBits[T ~uint16 | ~uint32](z []T, num tensor.Numerics, exp, frac, maxFinite T) {
	sat := num.Overflow == tensor.OverflowSaturate
	flush := num.Subnormals == tensor.SubnormalFlush
	if !sat && !flush {
		return
	}
	if useFixAVX2 {
		z = z[fixBitsVec(z, exp, frac, maxFinite, sat, flush):]
	}
	sign := ^(exp | frac)
	for i, v := range z {
		switch e := v & exp; {
		case sat && e == exp:
			if v&frac != 0 {
				z[i] = 0 // NaN → +0
			} else {
				z[i] = v&sign | maxFinite // ±Inf → ±max
			}
		case flush && e == 0 && v&frac != 0:
			z[i] = v & sign // subnormal → signed zero
		}
	}
}

func fixF16(z []float16.Float16, num tensor.Numerics) {
	fixBits(view[uint16](asBytes(z)), num, 0x7C00, 0x03FF, 0x7BFF)
}

func fixBF16(z []tensor.BF16, num tensor.Numerics) {
	fixBits(view[uint16](asBytes(z)), num, 0x7F80, 0x007F, 0x7F7F)
}

func fixF32(z []float32, num tensor.Numerics) {
	fixBits(view[uint32](asBytes(z)), num, 0x7F800000, 0x007FFFFF, 0x7F7FFFFF)
}

// Duplicate sets the first n elements of dst to v rounded to dt under the
// profile's numerics (Ascend C's Duplicate).
func (c *Core) Duplicate(dt tensor.DType, dst *Buffer, v float64, n int) error {
	if err := vectorDType("Duplicate", dt); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("Duplicate: negative count %d", n)
	}
	bytes := n * dt.Size()
	if err := c.checkBuf("Duplicate: dst", dst, UB, bytes); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	r := c.prof.Numerics.Round(v, dt)
	switch dt {
	case tensor.Float16:
		fillT(dst.f16()[:n], float16.Fromfloat32(float32(r)))
	case tensor.BFloat16:
		fillT(dst.bf16()[:n], tensor.BF16FromFloat32(float32(r)))
	case tensor.Float32:
		fillT(dst.f32()[:n], float32(r))
	case tensor.Int8:
		fillT(dst.i8()[:n], int8(r))
	}
	c.issue(PipeV, "Duplicate", c.vectorCycles(bytes), gmAccess{}, wr(dst, 0, bytes))
	return nil
}

func fillT[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

// Cast converts the first n elements of src (dtype from) into dst (dtype
// to), rounding once to the target under the profile's numerics: float
// targets round to nearest even (then saturate/flush), int8 targets use the
// profile's int8 rounding, saturate to [−128, 127] and map NaN to 0.
// Widening casts are exact. It costs like a vector instruction over the
// wider of the two operands.
func (c *Core) Cast(to, from tensor.DType, dst, src *Buffer, n int) error {
	if err := vectorDType("Cast", to); err != nil {
		return err
	}
	if err := vectorDType("Cast", from); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("Cast: negative count %d", n)
	}
	if err := c.checkBuf("Cast: dst", dst, UB, n*to.Size()); err != nil {
		return err
	}
	if err := c.checkBuf("Cast: src", src, UB, n*from.Size()); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if to.Size() != from.Size() && dst == src {
		return fmt.Errorf("Cast: in-place cast between %s and %s of different sizes", from, to)
	}
	num := c.prof.Numerics
	// Every source value is exact in fp32 (int8, fp16, bf16 and fp32 all
	// embed in fp32), so a float target rounds once from that value.
	get := func(i int) float32 {
		switch from {
		case tensor.Float16:
			return src.f16()[i].Float32()
		case tensor.BFloat16:
			return src.bf16()[i].Float32()
		case tensor.Float32:
			return src.f32()[i]
		}
		return float32(src.i8()[i])
	}
	switch to {
	case tensor.Float16:
		z := dst.f16()[:n]
		if from == tensor.Float32 {
			f32sToF16(z, src.f32()[:n], false) // a conversion keeps a NaN (nan.go); float16.Fromfloat32, branch-light (f16.go)
		} else {
			for i := range z {
				z[i] = float16.Fromfloat32(get(i))
			}
		}
		fixF16(z, num)
	case tensor.BFloat16:
		z := dst.bf16()[:n]
		if from == tensor.Float32 {
			for i, v := range src.f32()[:n] {
				z[i] = tensor.BF16FromFloat32(v)
			}
		} else {
			for i := range z {
				z[i] = tensor.BF16FromFloat32(get(i))
			}
		}
		fixBF16(z, num)
	case tensor.Float32:
		z := dst.f32()[:n]
		if from == tensor.Float32 {
			copy(z, src.f32()[:n])
		} else {
			for i := range z {
				z[i] = get(i)
			}
		}
		fixF32(z, num)
	case tensor.Int8:
		z := dst.i8()[:n]
		for i := range z {
			z[i] = int8(num.Round(float64(get(i)), tensor.Int8))
		}
	}
	c.issue(PipeV, "Cast", c.vectorCycles(n*max(to.Size(), from.Size())), gmAccess{}, rd(src, 0, n*from.Size()), wr(dst, 0, n*to.Size()))
	c.readUB(n * from.Size())
	return nil
}

// VectorOperand is one UB operand of a kernel-defined vector instruction
// (Core.VectorFused): the buffer and how many of its bytes the
// instruction reads or writes.
type VectorOperand struct {
	Name  string // names the operand in errors
	Buf   *Buffer
	Bytes int
	// ReadBytes is how many of those bytes the instruction reads (a
	// source, or a destination it also reads; 0 for an operand it only
	// writes), at most Bytes: they count in UBReadBytes (Cost.UBReuse).
	// The zero default means "written only", so a forgotten count
	// undercounts reads, which can only lower the reuse figure, never
	// flatter it.
	ReadBytes int
}

// VectorFused runs one vector instruction whose elementwise arithmetic
// the kernel supplies as body: a fused step of an operator's own epilogue
// (a GEMM's dequantisation, alpha or beta·C) whose rounding points the
// op's contract fixes and no built-in primitive has. It checks that every
// operand is a live UB buffer of this core holding its bytes, runs body,
// and charges one vector instruction over bytes, like the built-in
// primitives. body must touch only the operands, within their bytes.
func (c *Core) VectorFused(op string, bytes int, body func(), operands ...VectorOperand) error {
	if bytes < 0 {
		return fmt.Errorf("%s: negative byte count %d", op, bytes)
	}
	for _, o := range operands {
		if o.Bytes < 0 || o.ReadBytes < 0 || o.ReadBytes > o.Bytes {
			return fmt.Errorf("%s: %s: byte count %d or read count %d outside [0, bytes]", op, o.Name, o.Bytes, o.ReadBytes)
		}
		if err := c.checkBufOp(op, o.Name, o.Buf, UB, o.Bytes); err != nil {
			return err
		}
	}
	body()
	var buf [8]operand
	ops := buf[:0]
	for _, o := range operands {
		if o.ReadBytes > 0 {
			ops = append(ops, rd(o.Buf, 0, o.ReadBytes))
		}
		if o.ReadBytes == 0 || o.Bytes > o.ReadBytes {
			ops = append(ops, wr(o.Buf, 0, o.Bytes))
		}
	}
	if bytes > 0 {
		c.issue(PipeV, op, c.vectorCycles(bytes), gmAccess{}, ops...)
	}
	for _, o := range operands {
		c.readUB(o.ReadBytes)
	}
	return nil
}
