package tensor

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/x448/float16"
)

// fuzzMaxElements is the element cap FuzzReadNpy reads with: small, so
// that a tensor or an allocation beyond the cap is easy to see.
const fuzzMaxElements = 1 << 16

// fuzzSeeds returns valid streams of every dtype and malformed ones, with
// the dtype to ask for.
func fuzzSeeds() []struct {
	data []byte
	want DType
} {
	type seed = struct {
		data []byte
		want DType
	}
	var seeds []seed
	for _, d := range DTypes() {
		for _, shape := range [][]int{{2, 3}, {}, {0}} {
			x := MustNew(d, shape...)
			fillPatterns(x)
			var buf bytes.Buffer
			if err := WriteNpy(&buf, x); err != nil {
				panic(err)
			}
			seeds = append(seeds, seed{buf.Bytes(), d})
			if d != BFloat16 && len(shape) == 2 {
				seeds = append(seeds, seed{buf.Bytes(), 0})
			}
		}
	}
	f2 := []byte{0, 0x3c, 0, 0xc0}
	return append(seeds, []seed{
		{npyBytes(2, npyDict("<f2", "(2,)"), f2), 0},
		{npyBytes(3, npyDict("<f2", "(1, 2)"), f2), Float16},
		{npyBytes(1, `{"shape": (2L,), "descr": "<f2", "fortran_order": False}`, f2), 0},
		{npyBytes(1, "{'descr': '<f2', 'fortran_order': True, 'shape': (2,)}\n", f2), 0},
		{npyBytes(1, npyDict(">f2", "(2,)"), f2), 0},
		{npyBytes(1, npyDict("<u2", "(2,)"), f2), 0},
		{npyBytes(1, npyDict("<i8", "(2,)"), f2), 0},
		{npyBytes(1, "{'descr': [('a', '<f2')], 'fortran_order': False, 'shape': (2,)}", f2), 0},
		{npyBytes(1, npyDict("<f2", "(1099511627776,)"), f2), 0},
		{npyBytes(1, npyDict("<f2", "(65536, 65536)"), f2), 0},
		{npyBytes(1, npyDict("<f8", "(65536,)"), f2), 0}, // at the cap, data missing
		{npyBytes(1, npyDict("<f2", "(-2,)"), f2), 0},
		{npyBytes(1, npyDict("<f2", "(2)"), f2), 0},
		{npyBytes(1, npyDict("<f2", "(8,)"), f2), 0},
		{npyBytes(1, npyDict("<f2", "(1,)"), f2), 0},
		{npyBytes(1, "{'descr': '<f2'", f2), 0},
		{npyBytes(4, npyDict("<f2", "(2,)"), f2), 0},
		{[]byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"), 0},
		{[]byte("\x93NUMPY\x01\x00\xff\xff{"), 0},
		{[]byte("\x93NUMPY"), 0},
		{nil, 0},
	}...)
}

// FuzzReadNpy feeds arbitrary bytes to ReadNpy: it must never panic,
// must return either a consistent tensor within the element cap or an
// error, and what it accepts must survive WriteNpy and ReadNpy bit for bit.
func FuzzReadNpy(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.data, uint8(s.want))
	}
	f.Fuzz(func(t *testing.T, data []byte, want uint8) {
		wantD := DType(want % 9) // 0 (infer), the 7 dtypes and one invalid value
		opts := ReadOptions{MaxElements: fuzzMaxElements}
		x, err := ReadNpy(bytes.NewReader(data), wantD, opts)
		// The same stream without a Len method takes the path that cannot
		// presize; it must give the same answer.
		xs, errs := ReadNpy(struct{ io.Reader }{bytes.NewReader(data)}, wantD, opts)
		if (err == nil) != (errs == nil) || (err != nil && err.Error() != errs.Error()) {
			t.Fatalf("ReadNpy with and without Len disagree: %v / %v", err, errs)
		}
		if err == nil {
			if ok, i := BitsEqual(x, xs); !ok {
				t.Fatalf("ReadNpy with and without Len disagree at element %d: %v / %v", i, x, xs)
			}
			if dataCap(xs) > fuzzMaxElements {
				t.Fatalf("ReadNpy without Len returned %v with capacity %d", xs, dataCap(xs))
			}
		}
		if err != nil {
			if x != nil {
				t.Fatalf("ReadNpy returned both %v and error %v", x, err)
			}
			if !strings.HasPrefix(err.Error(), "npy: ") {
				t.Fatalf("ReadNpy error %q does not start with \"npy: \"", err)
			}
			return
		}
		n, err := NumElements(x.Shape)
		if err != nil || n != x.Len() || n > fuzzMaxElements || dataCap(x) > fuzzMaxElements {
			t.Fatalf("ReadNpy = %v with Len %d, cap %d (NumElements %d, %v), want at most %d elements", x, x.Len(), dataCap(x), n, err, fuzzMaxElements)
		}
		if err := x.check(); err != nil {
			t.Fatalf("ReadNpy returned an inconsistent tensor: %v", err)
		}
		if wantD != 0 && x.DType != wantD {
			t.Fatalf("ReadNpy(want %s) returned %v", wantD, x)
		}
		if len(data) < 10+n*x.DType.Size() {
			t.Fatalf("ReadNpy returned %v from only %d bytes", x, len(data))
		}
		var buf bytes.Buffer
		if err := WriteNpy(&buf, x); err != nil {
			t.Fatalf("WriteNpy(%v): %v", x, err)
		}
		y, err := ReadNpy(&buf, x.DType, opts)
		if err != nil {
			t.Fatalf("ReadNpy(WriteNpy(%v)): %v", x, err)
		}
		if ok, i := BitsEqual(x, y); !ok {
			t.Fatalf("ReadNpy(WriteNpy(%v)) = %v, differs at element %d", x, y, i)
		}
	})
}

// dataCap is the capacity of x's backing slice.
func dataCap(x *Tensor) int {
	switch s := x.data.(type) {
	case []float64:
		return cap(s)
	case []float32:
		return cap(s)
	case []float16.Float16:
		return cap(s)
	case []BF16:
		return cap(s)
	case []int8:
		return cap(s)
	case []int32:
		return cap(s)
	case []uint8:
		return cap(s)
	}
	panic(fmt.Sprintf("dataCap: tensor %v without data", x))
}
