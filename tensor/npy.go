package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"codeberg.org/sbinet/npyio/npy"
	"github.com/x448/float16"
)

// .npy I/O (NEP 1, https://numpy.org/neps/nep-0001-npy-format.html).
//
// The header is parsed here rather than by codeberg.org/sbinet/npyio's
// npy.NewReader, because that reader trusts its input: it allocates the
// header length the file claims (up to 4 GiB for a version 2.0 file)
// before reading it, slices the header by the positions of substrings
// without checking them (a header without '\n', or with the keys in
// another order, makes it panic), does not know format version 3.0, and
// its Read allocates by the header's shape before any data arrives. Its
// writer only writes one-dimensional shapes and pads the header wrongly
// for the 64-byte alignment. So this file reads and writes the format
// itself, validating every field before it allocates anything, and takes
// from npyio only its definition of the magic string; npyio is the
// independent implementation the tests check interoperability against
// (fp64, fp32, int8, int32, uint8 in both directions).

// maxNpyHeaderLen caps the header length a file may claim. numpy's own
// reader refuses headers above 10000 bytes by default; a tensor header
// needs well under 1 KiB.
const maxNpyHeaderLen = 64 << 10

// npyChunk is the number of data bytes read or written per step.
const npyChunk = 256 << 10

// npyDescrs maps each dtype to the descr it is stored under. bf16 has no
// numpy dtype: it is stored as its uint16 bit patterns ('<u2') and only
// read back as bf16 when the caller asks for bf16.
var npyDescrs = [...]string{
	Float64:  "<f8",
	Float32:  "<f4",
	Float16:  "<f2",
	BFloat16: "<u2",
	Int8:     "|i1",
	Int32:    "<i4",
	Uint8:    "|u1",
}

// NpyDescr returns the .npy descr string that dtype d is stored under,
// without quotes ("<f2" for fp16, "<u2" for bf16 bit patterns, "|i1" for
// int8, ...), or "" for an invalid dtype.
func NpyDescr(d DType) string {
	if !d.Valid() {
		return ""
	}
	return npyDescrs[d]
}

// ReadOptions limits what ReadNpy accepts.
type ReadOptions struct {
	// MaxElements caps the number of elements the header may claim; it is
	// checked before anything is allocated. 0 (or a negative value) means
	// the package's MaxElements, which is also the upper limit.
	MaxElements int
}

func (o ReadOptions) maxElements() int {
	if o.MaxElements <= 0 || o.MaxElements > MaxElements {
		return MaxElements
	}
	return o.MaxElements
}

// ReadNpy reads one .npy stream. want is the dtype the caller expects: the
// on-disk descr must match it ('<f8' fp64, '<f4' fp32, '<f2' fp16, '<u2'
// bf16 (bit patterns; only when want==BFloat16), '|i1' int8, '<i4' int32,
// '|u1' uint8). want==0 means infer (then '<u2' is an error: bf16 must be
// named by the caller).
//
// Nothing in the stream is trusted: the magic, the version (1.0, 2.0 or
// 3.0), the header length (at most 64 KiB) and the header dictionary are
// checked; Fortran order, big-endian and unknown descrs are rejected; the
// element count is checked against opts before any allocation; the data
// must be exactly the shape's element count times the item size, neither
// shorter nor longer (ReadNpy reads r to its end). Data is read in bounded
// chunks, so a header claiming more data than the stream holds costs
// memory in proportion to the data actually present.
func ReadNpy(r io.Reader, want DType, opts ReadOptions) (*Tensor, error) {
	size := int64(-1)
	if lr, ok := r.(interface{ Len() int }); ok { // bytes.Reader, strings.Reader, bytes.Buffer
		size = int64(lr.Len())
	}
	t, err := readNpy(r, want, opts, size)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	return t, nil
}

// ReadNpyFile is ReadNpy on the named file; its errors start with the path,
// e.g. "x.npy: fortran_order arrays are not supported".
func ReadNpyFile(path string, want DType, opts ReadOptions) (*Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	t, err := readNpy(f, want, opts, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// npyHeader is the parsed header dictionary.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// readNpy reads one .npy stream; size is the stream's length when known
// (-1 otherwise), used only to size the element slice at once when the
// data is all there.
func readNpy(r io.Reader, want DType, opts ReadOptions, size int64) (*Tensor, error) {
	if want != 0 && !want.Valid() {
		return nil, fmt.Errorf("invalid requested dtype %d", uint8(want))
	}
	var pre [8]byte // magic, major, minor
	if n, err := io.ReadFull(r, pre[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, errors.New("empty file: not a .npy file")
		}
		return nil, readErr(err, "truncated header: have %d bytes, not a .npy file", n)
	}
	if !bytes.Equal(pre[:6], npy.Magic[:]) {
		return nil, fmt.Errorf("not a .npy file (magic %q, want %q)", pre[:6], npy.Magic[:])
	}
	major, minor := pre[6], pre[7]
	lenSize := 4
	switch {
	case major == 1 && minor == 0:
		lenSize = 2
	case (major == 2 || major == 3) && minor == 0:
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d (want 1.0, 2.0 or 3.0)", major, minor)
	}
	var lenBytes [4]byte
	lb := lenBytes[:lenSize]
	if n, err := io.ReadFull(r, lb); err != nil {
		return nil, readErr(err, "truncated header: have %d of %d header-length bytes", n, lenSize)
	}
	var hlen uint64
	if lenSize == 2 {
		hlen = uint64(binary.LittleEndian.Uint16(lb))
	} else {
		hlen = uint64(binary.LittleEndian.Uint32(lb))
	}
	if hlen > maxNpyHeaderLen {
		return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", hlen, maxNpyHeaderLen)
	}
	hdr := make([]byte, hlen)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return nil, readErr(err, "truncated header: have %d bytes, want %d", n, hlen)
	}
	h, err := parseNpyHeader(hdr)
	if err != nil {
		return nil, err
	}
	if h.fortran {
		return nil, errors.New("fortran_order arrays are not supported")
	}
	d, err := npyDType(h.descr, want)
	if err != nil {
		return nil, err
	}
	n, err := numElements(h.shape, opts.maxElements())
	if err != nil {
		return nil, err
	}
	t := &Tensor{DType: d, Shape: h.shape}
	// The data may be presized when the stream is known to hold all of it.
	presize := size >= 0 && size-int64(8+lenSize)-int64(hlen) >= int64(n)*int64(d.Size())
	le := binary.LittleEndian
	switch d {
	case Float64:
		t.data, err = readNpyData(r, n, presize, 8, func(dst []float64, src []byte) {
			for i := range dst {
				dst[i] = math.Float64frombits(le.Uint64(src[8*i:]))
			}
		})
	case Float32:
		t.data, err = readNpyData(r, n, presize, 4, func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
			}
		})
	case Float16:
		t.data, err = readNpyData(r, n, presize, 2, func(dst []float16.Float16, src []byte) {
			for i := range dst {
				dst[i] = float16.Frombits(le.Uint16(src[2*i:]))
			}
		})
	case BFloat16:
		t.data, err = readNpyData(r, n, presize, 2, func(dst []BF16, src []byte) {
			for i := range dst {
				dst[i] = BF16(le.Uint16(src[2*i:]))
			}
		})
	case Int8:
		t.data, err = readNpyData(r, n, presize, 1, func(dst []int8, src []byte) {
			for i := range dst {
				dst[i] = int8(src[i])
			}
		})
	case Int32:
		t.data, err = readNpyData(r, n, presize, 4, func(dst []int32, src []byte) {
			for i := range dst {
				dst[i] = int32(le.Uint32(src[4*i:]))
			}
		})
	case Uint8:
		t.data, err = readNpyData(r, n, presize, 1, func(dst []uint8, src []byte) { copy(dst, src) })
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// readErr turns an io.ReadFull failure into a truncation message, keeping
// any other read error.
func readErr(err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("reading header: %w", err)
}

// readNpyData reads exactly n elements of size bytes each and then
// requires r to be at its end. Reads start at 4 KiB and double up to
// npyChunk bytes. With presize (the caller knows the stream holds all the
// data) the element slice is allocated once; otherwise it grows by
// doubling as data arrives (never beyond n), so memory stays in proportion
// to the data actually present: a header that overstates the data costs
// at most about twice the bytes the stream holds, plus a few KiB.
func readNpyData[T any](r io.Reader, n int, presize bool, size int, decode func(dst []T, src []byte)) ([]T, error) {
	const firstChunk = 4 << 10
	step := max(1, firstChunk/size) // elements per read, doubling to npyChunk
	out := make([]T, 0, min(n, step))
	if presize {
		out = make([]T, 0, n)
	}
	var buf []byte
	for len(out) < n {
		k := min(n-len(out), step)
		if len(buf) < k*size {
			buf = make([]byte, k*size)
		}
		got, err := io.ReadFull(r, buf[:k*size])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated data: have %d bytes, want %d", len(out)*size+got, n*size)
			}
			return nil, fmt.Errorf("reading data: %w", err)
		}
		if cap(out)-len(out) < k {
			grown := make([]T, len(out), min(n, max(2*cap(out), len(out)+k)))
			copy(grown, out)
			out = grown
		}
		m := len(out)
		out = out[:m+k]
		decode(out[m:], buf[:k*size])
		step = min(2*step, npyChunk/size)
	}
	// The data must end here: count what follows, up to a limit.
	const limit = 1 << 20
	extra, err := io.Copy(io.Discard, io.LimitReader(r, limit))
	if err != nil {
		return nil, fmt.Errorf("reading data: %w", err)
	}
	if extra > 0 {
		more := ""
		if extra == limit {
			more = "at least "
		}
		return nil, fmt.Errorf("trailing data: %s%d bytes after the %d data bytes of the shape", more, extra, n*size)
	}
	return out, nil
}

// npyDType maps a descr to the dtype it is read as, given what the caller
// wants (0: infer).
func npyDType(descr string, want DType) (DType, error) {
	var d DType
	switch descr {
	case "<f8":
		d = Float64
	case "<f4":
		d = Float32
	case "<f2":
		d = Float16
	case "<u2":
		if want == 0 {
			return 0, errors.New("descr '<u2' holds bf16 bit patterns only when the caller asks for bf16; uint16 tensors are not supported")
		}
		d = BFloat16
	case "|i1", "<i1", ">i1", "=i1", "i1":
		d = Int8
	case "<i4":
		d = Int32
	case "|u1", "<u1", ">u1", "=u1", "u1":
		d = Uint8
	default:
		if strings.HasPrefix(descr, ">") && slices.Contains([]string{"f8", "f4", "f2", "u2", "i4"}, descr[1:]) {
			return 0, fmt.Errorf("big-endian descr %q is not supported (want little-endian '<')", descr)
		}
		return 0, fmt.Errorf("unsupported descr %q (want one of '<f8', '<f4', '<f2', '<u2' (bf16), '|i1', '<i4', '|u1')", descr)
	}
	if want != 0 && want != d {
		return 0, fmt.Errorf("dtype mismatch: file has descr %q (%s), want %s (%q)", descr, d, want, NpyDescr(want))
	}
	return d, nil
}

// parseNpyHeader parses the header dictionary, a Python literal such as
//
//	{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }
//
// followed by padding (spaces and a final newline). It accepts exactly the
// literals numpy writes: single- or double-quoted strings without escapes,
// True/False, and tuples of non-negative decimal integers (an "L" suffix,
// as Python 2 numpy wrote, is allowed). All three keys are required, once.
// Versions 1.0 and 2.0 are latin-1 and 3.0 is UTF-8; the accepted syntax
// is ASCII either way.
func parseNpyHeader(b []byte) (npyHeader, error) {
	var h npyHeader
	p := &literalParser{s: b}
	p.space()
	if !p.eat('{') {
		return h, p.errorf("header is not a dictionary")
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("header key: %w", err)
		}
		if seen[key] {
			return h, p.errorf("header repeats key %q", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return h, p.errorf("header: want ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() == '[' || p.peek() == '{' {
				return h, fmt.Errorf("unsupported descr %s: structured dtypes are not supported", p.raw(60))
			}
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.tuple()
		default:
			return h, p.errorf("header has unexpected key %q", key)
		}
		if err != nil {
			return h, fmt.Errorf("header %s: %w", key, err)
		}
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return h, p.errorf("header: want ',' or '}' after the value of %q", key)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("header is missing key %q", k)
		}
	}
	p.space()
	if p.i != len(p.s) {
		return h, p.errorf("header has trailing bytes after the dictionary")
	}
	return h, nil
}

// literalParser scans the Python literals of a .npy header.
type literalParser struct {
	s []byte
	i int
}

func (p *literalParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s (at header byte %d)", fmt.Sprintf(format, args...), p.i)
}

func (p *literalParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *literalParser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

func (p *literalParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// raw returns the text from the current position to the end of the
// bracketed literal there (or the end of the header), quoted and cut to at
// most max bytes, for error messages.
func (p *literalParser) raw(max int) string {
	depth, j := 0, p.i
	var quote byte
scan:
	for ; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			if depth--; depth == 0 {
				j++
				break scan
			}
		}
	}
	s := string(p.s[p.i:j])
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

func (p *literalParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("want a quoted string")
	}
	start := p.i + 1
	end := bytes.IndexByte(p.s[start:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	s := p.s[start : start+end]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '\n') >= 0 {
		return "", p.errorf("unsupported string %s", strconv.Quote(string(s)))
	}
	p.i = start + end + 1
	return string(s), nil
}

func (p *literalParser) boolean() (bool, error) {
	rest := p.s[p.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("True")):
		p.i += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("False")):
		p.i += 5
		return false, nil
	}
	return false, p.errorf("want True or False")
}

// tuple parses "()", "(3,)" or "(2, 3)" (a trailing comma is allowed after
// the last of several elements). "(3)" is not a tuple in Python, and numpy
// rejects it, so it is rejected here too.
func (p *literalParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.errorf("want a tuple of integers")
	}
	var dims []int
	for {
		p.space()
		if p.eat(')') {
			if len(dims) == 1 {
				return nil, p.errorf("(%d) is not a tuple: a one-dimensional shape is written (%d,)", dims[0], dims[0])
			}
			return dims, nil
		}
		v, err := p.integer()
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("dimension %d is negative (%d)", len(dims), v)
		}
		dims = append(dims, v)
		p.space()
		if p.eat(',') {
			p.space()
			if p.eat(')') {
				return dims, nil
			}
			continue
		}
		if p.eat(')') {
			if len(dims) == 1 {
				return nil, p.errorf("(%d) is not a tuple: a one-dimensional shape is written (%d,)", dims[0], dims[0])
			}
			return dims, nil
		}
		return nil, p.errorf("want ',' or ')' in the shape tuple")
	}
}

// integer parses an optionally negative decimal integer with an optional
// Python 2 "L" suffix.
func (p *literalParser) integer() (int, error) {
	start := p.i
	if p.peek() == '-' || p.peek() == '+' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits {
		return 0, p.errorf("want an integer")
	}
	text := string(p.s[start:p.i])
	if p.peek() == 'L' {
		p.i++
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, p.errorf("dimension %s is out of range", text)
	}
	return v, nil
}

// WriteNpy writes t as one .npy stream: version 1.0 header (2.0 only if
// the header would not fit 1.0's 16-bit length), padded with spaces and a
// newline so that the data starts at a multiple of 64 bytes, C order,
// little-endian, fp16 as '<f2' and bf16 as its '<u2' bit patterns.
func WriteNpy(w io.Writer, t *Tensor) error {
	if err := writeNpy(w, t); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}

func writeNpy(w io.Writer, t *Tensor) error {
	if err := t.check(); err != nil {
		return err
	}
	if _, err := w.Write(npyHeaderBytes(NpyDescr(t.DType), t.Shape)); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch s := t.data.(type) {
	case []float64:
		return writeNpyData(w, s, 8, func(dst []byte, src []float64) {
			for i, v := range src {
				le.PutUint64(dst[8*i:], math.Float64bits(v))
			}
		})
	case []float32:
		return writeNpyData(w, s, 4, func(dst []byte, src []float32) {
			for i, v := range src {
				le.PutUint32(dst[4*i:], math.Float32bits(v))
			}
		})
	case []float16.Float16:
		return writeNpyData(w, s, 2, func(dst []byte, src []float16.Float16) {
			for i, v := range src {
				le.PutUint16(dst[2*i:], v.Bits())
			}
		})
	case []BF16:
		return writeNpyData(w, s, 2, func(dst []byte, src []BF16) {
			for i, v := range src {
				le.PutUint16(dst[2*i:], uint16(v))
			}
		})
	case []int8:
		return writeNpyData(w, s, 1, func(dst []byte, src []int8) {
			for i, v := range src {
				dst[i] = byte(v)
			}
		})
	case []int32:
		return writeNpyData(w, s, 4, func(dst []byte, src []int32) {
			for i, v := range src {
				le.PutUint32(dst[4*i:], uint32(v))
			}
		})
	case []uint8:
		_, err := w.Write(s)
		return err
	}
	return nil // unreachable: check accepted the tensor
}

// check reports whether t is consistent: a valid dtype, a data slice of
// that dtype, and as many elements as the shape says.
func (t *Tensor) check() error {
	if !t.DType.Valid() {
		return fmt.Errorf("tensor has invalid dtype %d", uint8(t.DType))
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return err
	}
	ok := false
	switch t.data.(type) {
	case []float64:
		ok = t.DType == Float64
	case []float32:
		ok = t.DType == Float32
	case []float16.Float16:
		ok = t.DType == Float16
	case []BF16:
		ok = t.DType == BFloat16
	case []int8:
		ok = t.DType == Int8
	case []int32:
		ok = t.DType == Int32
	case []uint8:
		ok = t.DType == Uint8
	}
	if !ok || t.Len() != n {
		return fmt.Errorf("tensor %v is inconsistent: its data holds %d elements of another layout", t, t.Len())
	}
	return nil
}

// npyHeaderBytes returns magic, version, header length and the padded
// header dictionary, 64-byte aligned.
func npyHeaderBytes(descr string, shape []int) []byte {
	var sb strings.Builder
	sb.WriteString("(")
	for i, s := range shape {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(s))
	}
	if len(shape) == 1 {
		sb.WriteString(",")
	}
	sb.WriteString(")")
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, sb.String())
	major, lenSize := byte(1), 2
	if len(dict)+1+64 > math.MaxUint16 {
		major, lenSize = 2, 4
	}
	prefix := len(npy.Magic) + 2 + lenSize
	pad := (64 - (prefix+len(dict)+1)%64) % 64
	hlen := len(dict) + pad + 1
	out := make([]byte, 0, prefix+hlen)
	out = append(out, npy.Magic[:]...)
	out = append(out, major, 0)
	if lenSize == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
	}
	out = append(out, dict...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	return append(out, '\n')
}

// writeNpyData encodes s in chunks of at most npyChunk bytes.
func writeNpyData[T any](w io.Writer, s []T, size int, encode func(dst []byte, src []T)) error {
	per := npyChunk / size
	buf := make([]byte, min(len(s), per)*size)
	for len(s) > 0 {
		k := min(len(s), per)
		encode(buf[:k*size], s[:k])
		if _, err := w.Write(buf[:k*size]); err != nil {
			return err
		}
		s = s[k:]
	}
	return nil
}

// WriteNpyFile writes t to path atomically: it writes a temporary file in
// the same directory, syncs it and renames it over path, so a reader sees
// the old file or the new one, never a partial one. Errors name the path.
func WriteNpyFile(path string, t *Tensor) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("%s: %w", path, err)
		}
	}()
	if err = writeNpy(f, t); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
