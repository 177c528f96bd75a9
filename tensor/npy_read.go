package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/safefile"
)

// Reading .npy data: the fixed prefix, the header (npy_header.go) and the
// data, each checked before anything is allocated for the next.

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
// e.g. "x.npy: fortran_order arrays are not supported". The file is opened
// with safefile.Open: a symbolic link, a FIFO, a device or a directory is
// rejected without being followed or read, and so is a file larger than
// the largest .npy file opts allow (the longest header plus the element
// cap times the item size). The header's claims are then checked against
// the file's size before the data is allocated, so memory stays bounded by
// the element cap, whatever the file or its header claim.
func ReadNpyFile(path string, want DType, opts ReadOptions) (*Tensor, error) {
	item := int64(8) // the largest item size, when the dtype is not known
	if want.Valid() {
		item = int64(want.Size())
	}
	f, fi, err := safefile.Open(path, npyPrefixMax+maxNpyHeaderLen+int64(opts.maxElements())*item)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	t, err := readNpy(f, want, opts, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", safefile.Quote(path), err)
	}
	return t, nil
}

// NpyFileDataBytes returns the data bytes of the named .npy file when
// ReadNpyFile would accept its header (and the file's size matches it),
// reading only the header: a caller can size what it readies for the
// data without allocating anything for a file that would be refused.
func NpyFileDataBytes(path string, want DType, opts ReadOptions) (int64, error) {
	item := int64(8)
	if want.Valid() {
		item = int64(want.Size())
	}
	f, fi, err := safefile.Open(path, npyPrefixMax+maxNpyHeaderLen+int64(opts.maxElements())*item)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h, err := readNpyHeader(f, want, opts, fi.Size())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", safefile.Quote(path), err)
	}
	return int64(h.n) * int64(h.dtype.Size()), nil
}

// npyPrefixMax is the longest fixed prefix: magic, version and a 4-byte
// header length.
const npyPrefixMax = 6 + 2 + 4

// readNpy reads one .npy stream; size is the stream's length when known
// (-1 otherwise): the data the header implies must then be exactly what
// follows the header, which is checked before anything is allocated for
// it.
func readNpy(r io.Reader, want DType, opts ReadOptions, size int64) (*Tensor, error) {
	h, err := readNpyHeader(r, want, opts, size)
	if err != nil {
		return nil, err
	}
	d, n, presize := h.dtype, h.n, h.presize
	t := &Tensor{DType: d, Shape: h.shape}
	rd := deadlineReader{r: r, deadline: opts.Deadline}
	le := binary.LittleEndian
	switch d {
	case Float64:
		t.data, err = readNpyData(rd, n, presize, 8, func(dst []float64, src []byte) {
			for i := range dst {
				dst[i] = math.Float64frombits(le.Uint64(src[8*i:]))
			}
		})
	case Float32:
		t.data, err = readNpyData(rd, n, presize, 4, func(dst []float32, src []byte) {
			for i := range dst {
				dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
			}
		})
	case Float16:
		t.data, err = readNpyData(rd, n, presize, 2, func(dst []float16.Float16, src []byte) {
			for i := range dst {
				dst[i] = float16.Frombits(le.Uint16(src[2*i:]))
			}
		})
	case BFloat16:
		t.data, err = readNpyData(rd, n, presize, 2, func(dst []BF16, src []byte) {
			for i := range dst {
				dst[i] = BF16(le.Uint16(src[2*i:]))
			}
		})
	case Int8:
		t.data, err = readNpyData(rd, n, presize, 1, func(dst []int8, src []byte) {
			for i := range dst {
				dst[i] = int8(src[i])
			}
		})
	case Int32:
		t.data, err = readNpyData(rd, n, presize, 4, func(dst []int32, src []byte) {
			for i := range dst {
				dst[i] = int32(le.Uint32(src[4*i:]))
			}
		})
	case Uint8:
		t.data, err = readNpyData(rd, n, presize, 1, func(dst []uint8, src []byte) { copy(dst, src) })
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// npyHead is what a .npy stream's checked header says of its data.
type npyHead struct {
	dtype   DType
	shape   []int
	n       int  // elements
	presize bool // the stream is known to hold exactly the data
}

// readNpyHeader reads and checks a .npy stream's prefix and header (see
// readNpy), leaving r at the first data byte.
func readNpyHeader(r io.Reader, want DType, opts ReadOptions, size int64) (npyHead, error) {
	if want != 0 && !want.Valid() {
		return npyHead{}, fmt.Errorf("invalid requested dtype %d", uint8(want))
	}
	var pre [8]byte // magic, major, minor
	if n, err := io.ReadFull(r, pre[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return npyHead{}, errors.New("empty file: not a .npy file")
		}
		return npyHead{}, readErr(err, "truncated header: have %d bytes, not a .npy file", n)
	}
	if !bytes.Equal(pre[:6], npyMagic[:]) {
		return npyHead{}, fmt.Errorf("not a .npy file (magic %q, want %q)", pre[:6], npyMagic[:])
	}
	major, minor := pre[6], pre[7]
	lenSize := 4
	switch {
	case major == 1 && minor == 0:
		lenSize = 2
	case (major == 2 || major == 3) && minor == 0:
	default:
		return npyHead{}, fmt.Errorf("unsupported .npy format version %d.%d (want 1.0, 2.0 or 3.0)", major, minor)
	}
	var lenBytes [4]byte
	lb := lenBytes[:lenSize]
	if n, err := io.ReadFull(r, lb); err != nil {
		return npyHead{}, readErr(err, "truncated header: have %d of %d header-length bytes", n, lenSize)
	}
	var hlen uint64
	if lenSize == 2 {
		hlen = uint64(binary.LittleEndian.Uint16(lb))
	} else {
		hlen = uint64(binary.LittleEndian.Uint32(lb))
	}
	if hlen > maxNpyHeaderLen {
		return npyHead{}, fmt.Errorf("header length %d exceeds the limit of %d bytes", hlen, maxNpyHeaderLen)
	}
	hdr := make([]byte, hlen)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return npyHead{}, readErr(err, "truncated header: have %d bytes, want %d", n, hlen)
	}
	h, err := parseNpyHeader(hdr)
	if err != nil {
		return npyHead{}, err
	}
	if h.fortran {
		return npyHead{}, errors.New("fortran_order arrays are not supported")
	}
	d, err := npyDType(h.descr, want)
	if err != nil {
		return npyHead{}, err
	}
	n, err := numElements(h.shape, opts.maxElements())
	if err != nil {
		return npyHead{}, err
	}
	want64 := int64(n) * int64(d.Size())
	presize := false
	if size >= 0 {
		switch have := size - int64(8+lenSize) - int64(hlen); {
		case have < want64:
			return npyHead{}, fmt.Errorf("truncated data: have %d bytes, want %d", max(have, 0), want64)
		case have > want64:
			return npyHead{}, fmt.Errorf("trailing data: %d bytes after the %d data bytes of the shape", have-want64, want64)
		}
		presize = true // the stream holds exactly the data
	}
	return npyHead{dtype: d, shape: h.shape, n: n, presize: presize}, nil
}

// deadlineReader fails reads past its deadline (zero: none).
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
}

// errDeadline is returned by reads past the deadline.
var errDeadline = errors.New("deadline passed while reading the data")

func (d deadlineReader) Read(p []byte) (int, error) {
	if !d.deadline.IsZero() && time.Now().After(d.deadline) {
		return 0, errDeadline
	}
	return d.r.Read(p)
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
//
// On a little-endian host with presize, the bytes are read straight into
// the element slice (hostLittleEndian), npyChunk bytes per read.
func readNpyData[T any](r io.Reader, n int, presize bool, size int, decode func(dst []T, src []byte)) ([]T, error) {
	if presize && hostLittleEndian {
		return readNpyRaw[T](r, n, size)
	}
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
	if err := npyDataEnds(r, n*size); err != nil {
		return nil, err
	}
	return out, nil
}

// readNpyRaw is readNpyData with presize on a little-endian host: the n
// elements' bytes are read into the element slice itself.
func readNpyRaw[T any](r io.Reader, n, size int) ([]T, error) {
	out := makeHuge[T](n, size)
	raw := rawBytes(out, size)
	for have := 0; have < len(raw); {
		k := min(len(raw)-have, npyChunk)
		got, err := io.ReadFull(r, raw[have:have+k])
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated data: have %d bytes, want %d", have+got, n*size)
			}
			return nil, fmt.Errorf("reading data: %w", err)
		}
		have += k
	}
	if err := npyDataEnds(r, n*size); err != nil {
		return nil, err
	}
	return out, nil
}

// npyDataEnds requires r to be at its end after the data bytes of the
// shape (want of them): it counts what follows, up to a limit.
func npyDataEnds(r io.Reader, want int) error {
	const limit = 1 << 20
	extra, err := io.Copy(io.Discard, io.LimitReader(r, limit))
	if err != nil {
		return fmt.Errorf("reading data: %w", err)
	}
	if extra > 0 {
		more := ""
		if extra == limit {
			more = "at least "
		}
		return fmt.Errorf("trailing data: %s%d bytes after the %d data bytes of the shape", more, extra, want)
	}
	return nil
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
