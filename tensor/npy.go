package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
// itself, validating every field before it allocates anything; npyio is
// the independent implementation the tests check interoperability against
// (fp64, fp32, int8, int32, uint8 in both directions), and its magic
// string against npyMagic's (TestNpyMagic). Only the tests import npyio:
// linking it would bring its pickle decoder and math/big into every
// binary, for six bytes (and into a fuzzing binary, where each
// instrumented branch costs the fuzzing engine time on every exec).

// npyMagic is the six bytes every .npy file starts with.
var npyMagic = [6]byte{'\x93', 'N', 'U', 'M', 'P', 'Y'}

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
	// Deadline, when not zero, is when reading must be done: data is read
	// in chunks and reading past it is an error (a file read as part of a
	// case is read within the case's time limit).
	Deadline time.Time
}

func (o ReadOptions) maxElements() int {
	if o.MaxElements <= 0 || o.MaxElements > MaxElements {
		return MaxElements
	}
	return o.MaxElements
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
	prefix := len(npyMagic) + 2 + lenSize
	pad := (64 - (prefix+len(dict)+1)%64) % 64
	hlen := len(dict) + pad + 1
	out := make([]byte, 0, prefix+hlen)
	out = append(out, npyMagic[:]...)
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

// writeNpyData encodes s in chunks of at most npyChunk bytes; on a
// little-endian host the chunks are s's own bytes (hostLittleEndian).
func writeNpyData[T any](w io.Writer, s []T, size int, encode func(dst []byte, src []T)) error {
	if hostLittleEndian {
		raw := rawBytes(s, size)
		for len(raw) > 0 {
			k := min(len(raw), npyChunk)
			if _, err := w.Write(raw[:k]); err != nil {
				return err
			}
			raw = raw[k:]
		}
		return nil
	}
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
