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
	"runtime"
	"slices"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npy"
)

// npyBytes builds a .npy stream by hand: magic, version major.0, the
// header length (2 bytes for 1.0, 4 for 2.0 and 3.0), the header and the
// data. The header is used as given (no padding is added).
func npyBytes(major byte, header string, data []byte) []byte {
	b := append([]byte("\x93NUMPY"), major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	b = append(b, header...)
	return append(b, data...)
}

// npyDict is the header dictionary numpy writes, with a newline.
func npyDict(descr, shape string) string {
	return fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }\n", descr, shape)
}

// TestNpyMagic holds npyMagic to npyio's, so dropping the import for a
// local copy cannot drift from the format's other implementation.
func TestNpyMagic(t *testing.T) {
	if npyMagic != npy.Magic {
		t.Errorf("npyMagic = %q, want npyio's %q", npyMagic[:], npy.Magic[:])
	}
}

func TestNpyDescr(t *testing.T) {
	want := map[DType]string{Float64: "<f8", Float32: "<f4", Float16: "<f2", BFloat16: "<u2", Int8: "|i1", Int32: "<i4", Uint8: "|u1"}
	for _, d := range DTypes() {
		if got := NpyDescr(d); got != want[d] {
			t.Errorf("NpyDescr(%s) = %q, want %q", d, got, want[d])
		}
	}
	if got := NpyDescr(0); got != "" {
		t.Errorf("NpyDescr(0) = %q, want \"\"", got)
	}
}

// TestNpyRoundTrip writes and reads back every dtype in several shapes,
// with NaN payloads (signaling ones included), −0, subnormals and
// infinities, and requires the bits back exactly.
func TestNpyRoundTrip(t *testing.T) {
	shapes := [][]int{{}, {0}, {1}, {7}, {2, 3}, {2, 0, 3}, {1, 1, 2, 5}, {3, 40000}}
	for _, d := range DTypes() {
		for _, shape := range shapes {
			x := MustNew(d, shape...)
			fillPatterns(x)
			var buf bytes.Buffer
			if err := WriteNpy(&buf, x); err != nil {
				t.Fatalf("WriteNpy(%v): %v", x, err)
			}
			raw := buf.Bytes()
			hlen := int(binary.LittleEndian.Uint16(raw[8:10]))
			if start := 10 + hlen; start%64 != 0 || raw[start-1] != '\n' {
				t.Errorf("WriteNpy(%v): data starts at byte %d (header ends %q), want a multiple of 64 after '\\n'", x, start, raw[start-1])
			}
			if got, want := len(raw)-10-hlen, x.Len()*d.Size(); got != want {
				t.Errorf("WriteNpy(%v): %d data bytes, want %d", x, got, want)
			}
			y, err := ReadNpy(bytes.NewReader(raw), d, ReadOptions{})
			if err != nil {
				t.Errorf("ReadNpy(WriteNpy(%v)): %v", x, err)
				continue
			}
			if ok, i := BitsEqual(x, y); !ok {
				t.Errorf("ReadNpy(WriteNpy(%v)) = %v, differs at element %d", x, y, i)
			}
			// Inferring the dtype works for everything but bf16.
			z, err := ReadNpy(bytes.NewReader(raw), 0, ReadOptions{})
			if d == BFloat16 {
				if err == nil || !strings.Contains(err.Error(), "bf16") {
					t.Errorf("ReadNpy(bf16 file, want 0) = %v, %v; want an error asking for bf16", z, err)
				}
			} else if err != nil || z.DType != d {
				t.Errorf("ReadNpy(%v file, want 0) = %v, %v; want dtype %s", x, z, err, d)
			}
		}
	}
}

// TestNpyGoldenFP16 compares WriteNpy's output with bytes derived by hand
// from NEP 1 for a 2×2 fp16 array, and reads them back.
func TestNpyGoldenFP16(t *testing.T) {
	// The dictionary, counted by hand:
	//   {                      1
	//   'descr': '<f2',       +16 = 17   ('descr' 7, ": " 2, '<f2' 5, ", " 2)
	//   'fortran_order': False, +24 = 41 ('fortran_order' 15, ": " 2, False 5, ", " 2)
	//   'shape': (2, 2),      +17 = 58   ('shape' 7, ": " 2, (2, 2) 6, ", " 2)
	//   }                      +1 = 59
	// Magic (6) + version (2) + length (2) = 10 bytes precede it. 10 + 59 +
	// the final '\n' = 70, so 58 spaces pad the whole header to 128 bytes,
	// and HEADER_LEN = 59 + 58 + 1 = 118 = 0x76.
	const dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }"
	if len(dict) != 59 {
		t.Fatalf("test premise: len(dict) = %d, want 59", len(dict))
	}
	want := "\x93NUMPY" + "\x01\x00" + "\x76\x00" + dict + strings.Repeat(" ", 58) + "\n" +
		// 1.0 = 0x3c00, -2.0 = 0xc000, 65504 = 0x7bff, -0 = 0x8000, little-endian.
		"\x00\x3c" + "\x00\xc0" + "\xff\x7b" + "\x00\x80"
	if len(want) != 128+8 {
		t.Fatalf("test premise: len(want) = %d, want 136", len(want))
	}
	x := MustNew(Float16, 2, 2)
	for i, b := range []uint64{0x3c00, 0xc000, 0x7bff, 0x8000} {
		x.SetBits(i, b)
	}
	var buf bytes.Buffer
	if err := WriteNpy(&buf, x); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != want {
		t.Errorf("WriteNpy(fp16 [2 2]) =\n%q\nwant\n%q", got, want)
	}
	y, err := ReadNpy(strings.NewReader(want), Float16, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, i := BitsEqual(x, y); !ok {
		t.Errorf("ReadNpy(golden) differs at element %d: %#04x", i, y.Bits(i))
	}
	if got := y.Float64s(); !slices.Equal(got[:3], []float64{1, -2, 65504}) || !sameFloat(got[3], math.Copysign(0, -1)) {
		t.Errorf("ReadNpy(golden) values = %v", got)
	}
}

// TestReadNpyAccepts covers headers numpy or other writers produce that
// differ from WriteNpy's: versions 2.0 and 3.0, key order, double quotes,
// Python 2 "L" suffixes, no padding, no newline, one-byte descrs with a
// byte-order mark.
func TestReadNpyAccepts(t *testing.T) {
	f4 := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0} // float32 1, -2
	for _, tc := range []struct {
		name  string
		in    []byte
		want  DType
		shape []int
	}{
		{"version 2.0", npyBytes(2, npyDict("<f4", "(2,)"), f4), Float32, []int{2}},
		{"version 3.0", npyBytes(3, npyDict("<f4", "(2,)"), f4), Float32, []int{2}},
		{"key order", npyBytes(1, "{'shape': (1, 2), 'fortran_order': False, 'descr': '<f4'}", f4), Float32, []int{1, 2}},
		{"double quotes", npyBytes(1, `{"descr": "<f4", "fortran_order": False, "shape": (2,)}`+"\n", f4), Float32, []int{2}},
		{"L suffix", npyBytes(1, npyDict("<f4", "(2L,)"), f4), Float32, []int{2}},
		{"trailing comma", npyBytes(1, npyDict("<f4", "(1, 2,)"), f4), Float32, []int{1, 2}},
		{"spaces", npyBytes(1, " {  'descr' :'<f4','fortran_order':False,'shape':( 2 , ) }  \n", f4), Float32, []int{2}},
		{"scalar", npyBytes(1, npyDict("<f4", "()"), f4[:4]), Float32, nil},
		{"empty", npyBytes(1, npyDict("<f4", "(0, 3)"), nil), Float32, []int{0, 3}},
		{"int8 '<i1'", npyBytes(1, npyDict("<i1", "(2,)"), []byte{1, 0xff}), Int8, []int{2}},
		{"uint8 '|u1'", npyBytes(1, npyDict("|u1", "(2,)"), []byte{1, 0xff}), Uint8, []int{2}},
	} {
		x, err := ReadNpy(bytes.NewReader(tc.in), 0, ReadOptions{})
		if err != nil {
			t.Errorf("%s: ReadNpy: %v", tc.name, err)
			continue
		}
		if x.DType != tc.want || !x.SameShape(tc.shape) {
			t.Errorf("%s: ReadNpy = %v, want %s%v", tc.name, x, tc.want, tc.shape)
		}
	}
}

// TestReadNpyErrors feeds malformed streams and checks the error names
// the problem.
func TestReadNpyErrors(t *testing.T) {
	ok := npyDict("<f2", "(2,)")
	data := []byte{0, 0x3c, 0, 0x3c}
	v1len := func(n uint16) []byte {
		return binary.LittleEndian.AppendUint16([]byte("\x93NUMPY\x01\x00"), n)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want DType
		err  string
	}{
		{"empty", nil, 0, "empty file"},
		{"short magic", []byte("\x93NUM"), 0, "truncated header"},
		{"bad magic", npyBytes(1, ok, data)[1:], 0, "not a .npy file"},
		{"text file", []byte("hello, world\n"), 0, "not a .npy file"},
		{"version 4.0", npyBytes(4, ok, data), 0, "unsupported .npy format version 4.0"},
		{"version 1.1", append([]byte("\x93NUMPY\x01\x01"), npyBytes(1, ok, data)[8:]...), 0, "version 1.1"},
		{"no header length", []byte("\x93NUMPY\x01\x00\x10"), 0, "truncated header"},
		{"header length beyond the cap", binary.LittleEndian.AppendUint32([]byte("\x93NUMPY\x02\x00"), 0xffffffff), 0, "header length 4294967295 exceeds"},
		{"header length beyond the data", append(v1len(200), ok...), 0, "truncated header: have 58 bytes, want 200"},
		{"not a dict", npyBytes(1, "[1, 2]\n", data), 0, "not a dictionary"},
		{"missing shape", npyBytes(1, "{'descr': '<f2', 'fortran_order': False}\n", data), 0, `missing key "shape"`},
		{"repeated key", npyBytes(1, "{'descr': '<f2', 'descr': '<f2', 'fortran_order': False, 'shape': (2,)}", data), 0, `repeats key "descr"`},
		{"unexpected key", npyBytes(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), 'x': 1}", data), 0, `unexpected key "x"`},
		{"unterminated string", npyBytes(1, "{'descr: '<f2'", data), 0, "want ':'"},
		{"unterminated dict", npyBytes(1, "{'descr': '<f2'", data), 0, "want ',' or '}'"},
		{"escape", npyBytes(1, `{'descr': '<f\2', 'fortran_order': False, 'shape': (2,)}`, data), 0, "unsupported string"},
		{"trailing garbage", npyBytes(1, npyDict("<f2", "(2,)")+"x", data), 0, "trailing bytes after the dictionary"},
		{"fortran order", npyBytes(1, "{'descr': '<f2', 'fortran_order': True, 'shape': (2,)}", data), 0, "fortran_order arrays are not supported"},
		{"fortran order not a bool", npyBytes(1, "{'descr': '<f2', 'fortran_order': 0, 'shape': (2,)}", data), 0, "want True or False"},
		{"unsupported descr", npyBytes(1, npyDict("<i8", "(2,)"), data), 0, `unsupported descr "<i8"`},
		{"unsupported descr bool", npyBytes(1, npyDict("|b1", "(2,)"), data), 0, `unsupported descr "|b1"`},
		{"unsupported descr complex", npyBytes(1, npyDict("<c8", "(2,)"), data), 0, `unsupported descr "<c8"`},
		{"structured descr", npyBytes(1, "{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2,)}", data), 0, `unsupported descr "[('a', '<f4'), ('b', '<f4')]": structured`},
		{"big-endian", npyBytes(1, npyDict(">f2", "(2,)"), data), 0, `big-endian descr ">f2"`},
		{"big-endian fp32", npyBytes(1, npyDict(">f4", "(1,)"), data), Float32, `big-endian descr ">f4"`},
		{"u2 without bf16", npyBytes(1, npyDict("<u2", "(2,)"), data), 0, "'<u2' holds bf16 bit patterns only when the caller asks for bf16"},
		{"u2 as fp16", npyBytes(1, npyDict("<u2", "(2,)"), data), Float16, `dtype mismatch: file has descr "<u2" (bf16), want fp16 ("<f2")`},
		{"fp16 as bf16", npyBytes(1, ok, data), BFloat16, `dtype mismatch: file has descr "<f2" (fp16), want bf16 ("<u2")`},
		{"fp32 as fp64", npyBytes(1, npyDict("<f4", "(1,)"), data), Float64, `dtype mismatch: file has descr "<f4" (fp32), want fp64`},
		{"invalid want", npyBytes(1, ok, data), DType(99), "invalid requested dtype 99"},
		{"negative dim", npyBytes(1, npyDict("<f2", "(2, -1)"), data), 0, "dimension 1 is negative"},
		{"not a tuple", npyBytes(1, npyDict("<f2", "(2)"), data), 0, "(2) is not a tuple"},
		{"list shape", npyBytes(1, npyDict("<f2", "[2]"), data), 0, "want a tuple"},
		{"float dim", npyBytes(1, npyDict("<f2", "(2.0,)"), data), 0, "want ',' or ')'"},
		{"dim out of range", npyBytes(1, npyDict("<f2", "(99999999999999999999,)"), data), 0, "out of range"},
		{"2^40 elements", npyBytes(1, npyDict("<f2", "(1099511627776,)"), data), 0, "more than 268435456 elements"},
		{"2^32 elements", npyBytes(1, npyDict("<f2", "(65536, 65536)"), data), 0, "more than 268435456 elements"},
		{"wrapping product", npyBytes(1, npyDict("<f2", "(4294967296, 4294967296)"), data), 0, "more than"},
		{"truncated data", npyBytes(1, npyDict("<f2", "(8,)"), make([]byte, 10)), 0, "truncated data: have 10 bytes, want 16"},
		{"no data", npyBytes(1, npyDict("<f2", "(8,)"), nil), 0, "truncated data: have 0 bytes, want 16"},
		{"odd byte", npyBytes(1, npyDict("<f2", "(2,)"), data[:3]), 0, "truncated data: have 3 bytes, want 4"},
		{"trailing data", npyBytes(1, npyDict("<f2", "(2,)"), append(data, 1, 2)), 0, "trailing data: 2 bytes after the 4 data bytes"},
		{"two arrays", append(npyBytes(1, ok, data), npyBytes(1, ok, data)...), 0, "trailing data"},
		{"data for empty shape", npyBytes(1, npyDict("<f2", "(0,)"), data), 0, "trailing data: 4 bytes"},
	} {
		x, err := ReadNpy(bytes.NewReader(tc.in), tc.want, ReadOptions{})
		if err == nil {
			t.Errorf("%s: ReadNpy = %v, want an error containing %q", tc.name, x, tc.err)
			continue
		}
		if !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "npy: ") {
			t.Errorf("%s: ReadNpy error %q, want \"npy: ...%s...\"", tc.name, err, tc.err)
		}
	}
}

func TestReadNpyMaxElements(t *testing.T) {
	in := npyBytes(1, npyDict("|u1", "(4, 5)"), make([]byte, 20))
	for _, tc := range []struct {
		max int
		ok  bool
	}{{0, true}, {-1, true}, {20, true}, {19, false}, {1, false}, {MaxElements * 4, true}} {
		_, err := ReadNpy(bytes.NewReader(in), Uint8, ReadOptions{MaxElements: tc.max})
		if (err == nil) != tc.ok {
			t.Errorf("ReadNpy(20 elements, MaxElements %d): err = %v, want ok=%v", tc.max, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("more than %d elements", tc.max)) {
			t.Errorf("ReadNpy(20 elements, MaxElements %d): err = %v, want it to name the cap", tc.max, err)
		}
	}
}

// TestReadNpyLyingHeader checks that a header claiming far more data than
// the stream holds is answered with a truncation error at a memory cost in
// proportion to the data present, not to the header's claim.
func TestReadNpyLyingHeader(t *testing.T) {
	for _, tc := range []struct {
		descr string
		want  DType
	}{{"<f8", Float64}, {"<f2", Float16}, {"|u1", Uint8}} {
		// MaxElements elements: up to 2 GiB if the reader believed it.
		in := npyBytes(1, npyDict(tc.descr, fmt.Sprintf("(%d,)", MaxElements)), make([]byte, 1000))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := ReadNpy(bytes.NewReader(in), tc.want, ReadOptions{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "truncated data: have 1000 bytes") {
			t.Errorf("ReadNpy(%s lying header) error %v, want truncated data", tc.descr, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
			t.Errorf("ReadNpy(%s lying header) allocated %d bytes for 1000 bytes of data", tc.descr, got)
		}
	}
}

// errReader fails after its data.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadNpyReaderError(t *testing.T) {
	boom := errors.New("boom")
	for _, cut := range []int{3, 9, 20, 80} {
		in := npyBytes(1, npyDict("<f2", "(8,)"), make([]byte, 16))
		_, err := ReadNpy(&errReader{in[:cut], boom}, Float16, ReadOptions{})
		if !errors.Is(err, boom) {
			t.Errorf("ReadNpy(reader failing after %d bytes) = %v, want it to wrap %v", cut, err, boom)
		}
	}
}

func TestNpyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	x := MustNew(BFloat16, 3, 4)
	fillPatterns(x)
	if err := WriteNpyFile(path, x); err != nil {
		t.Fatal(err)
	}
	y, err := ReadNpyFile(path, BFloat16, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, i := BitsEqual(x, y); !ok {
		t.Errorf("ReadNpyFile(WriteNpyFile(%v)) differs at element %d", x, i)
	}
	// Overwrite in place: the new content replaces the old atomically.
	z := MustNew(Int8, 5)
	fillPatterns(z)
	if err := WriteNpyFile(path, z); err != nil {
		t.Fatal(err)
	}
	if y, err := ReadNpyFile(path, Int8, ReadOptions{}); err != nil || !y.SameShape([]int{5}) {
		t.Errorf("ReadNpyFile after overwrite = %v, %v", y, err)
	}
	// A failed write leaves the old file and no temporary behind.
	bad := &Tensor{DType: Float16, Shape: []int{3}} // no data
	if err := WriteNpyFile(path, bad); err == nil || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("WriteNpyFile(inconsistent tensor) = %v, want an error naming %s", err, path)
	}
	if y, err := ReadNpyFile(path, Int8, ReadOptions{}); err != nil || !y.SameShape([]int{5}) {
		t.Errorf("ReadNpyFile after a failed write = %v, %v, want the previous file", y, err)
	}
	if err := WriteNpyFile(filepath.Join(dir, "missing", "y.npy"), z); err == nil {
		t.Errorf("WriteNpyFile into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only x.npy", names)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("WriteNpyFile mode = %v, %v, want 0644", fi.Mode(), err)
	}

	// Errors from ReadNpyFile start with the path.
	for _, tc := range []struct {
		name string
		in   []byte
		err  string
	}{
		{"f.npy", npyBytes(1, "{'descr': '<f2', 'fortran_order': True, 'shape': (2,)}\n", make([]byte, 4)), "fortran_order arrays are not supported"},
		{"t.npy", npyBytes(1, npyDict("<f2", "(8,)"), make([]byte, 10)), "truncated data: have 10 bytes, want 16"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.in, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadNpyFile(p, 0, ReadOptions{})
		if want := p + ": " + tc.err; err == nil || err.Error() != want {
			t.Errorf("ReadNpyFile(%s) error %q, want %q", tc.name, err, want)
		}
	}
	if _, err := ReadNpyFile(filepath.Join(dir, "nope.npy"), 0, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "nope.npy") {
		t.Errorf("ReadNpyFile(missing file) error %v, want it to name the file", err)
	}
}

func TestWriteNpyInvalid(t *testing.T) {
	for _, x := range []*Tensor{
		{DType: Float16, Shape: []int{3}},                        // no data
		{DType: 0, Shape: []int{}},                               // invalid dtype
		{DType: Float16, Shape: []int{-1}},                       // negative dim
		{DType: Float32, Shape: []int{2}, data: []float64{1, 2}}, // wrong layout
		{DType: Float32, Shape: []int{3}, data: []float32{1, 2}}, // wrong length
	} {
		if err := WriteNpy(io.Discard, x); err == nil {
			t.Errorf("WriteNpy(%v) succeeded, want an error", x)
		}
	}
	// A writer error is returned.
	if err := WriteNpy(failWriter{}, MustNew(Float16, 4)); err == nil {
		t.Errorf("WriteNpy to a failing writer succeeded")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestNpyInteropNpyio checks .npy files against the independent npyio
// implementation in both directions.
func TestNpyInteropNpyio(t *testing.T) {
	for _, tc := range []struct {
		d   DType
		val any // a slice npyio writes
		ptr func() any
	}{
		{Float64, []float64{1, -0.5, 1e300, 5e-324}, func() any { return new([]float64) }},
		{Float32, []float32{1, -0.5, 3e38, 1e-45}, func() any { return new([]float32) }},
		{Int8, []int8{-128, -1, 0, 127}, func() any { return new([]int8) }},
		{Int32, []int32{-1 << 31, -1, 0, 1<<31 - 1}, func() any { return new([]int32) }},
		{Uint8, []uint8{0, 1, 128, 255}, func() any { return new([]uint8) }},
	} {
		// npyio → ReadNpy.
		var buf bytes.Buffer
		if err := npy.Write(&buf, tc.val); err != nil {
			t.Fatalf("npy.Write(%T): %v", tc.val, err)
		}
		x, err := ReadNpy(bytes.NewReader(buf.Bytes()), tc.d, ReadOptions{})
		if err != nil {
			t.Errorf("ReadNpy(npyio %T): %v", tc.val, err)
			continue
		}
		if got, want := fmt.Sprint(tensorValues(x)), fmt.Sprint(tc.val); got != want || !x.SameShape([]int{4}) {
			t.Errorf("ReadNpy(npyio %T) = %v %s, want %s", tc.val, x, got, want)
		}

		// WriteNpy → npyio, as a 2×2 array (npyio reads the flat data).
		x.Shape = []int{2, 2}
		buf.Reset()
		if err := WriteNpy(&buf, x); err != nil {
			t.Fatal(err)
		}
		r, err := npy.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Errorf("npy.NewReader(WriteNpy(%v)): %v", x, err)
			continue
		}
		if strings.Trim(r.Header.Descr.Type, "'") != NpyDescr(tc.d) || !slices.Equal(r.Header.Descr.Shape, []int{2, 2}) || r.Header.Descr.Fortran {
			t.Errorf("npyio reads WriteNpy(%v) header as %v", x, r.Header)
		}
		ptr := tc.ptr()
		if err := r.Read(ptr); err != nil {
			t.Errorf("npyio Read(WriteNpy(%v)): %v", x, err)
			continue
		}
		if got, want := fmt.Sprint(ptr), "&"+fmt.Sprint(tc.val); got != want {
			t.Errorf("npyio reads WriteNpy(%v) as %s, want %s", x, got, want)
		}
	}
}

// tensorValues returns the backing slice of x, for printing.
func tensorValues(x *Tensor) any { return x.data }

// TestNpyNumpyFiles reads files written by numpy itself (see
// testdata/numpy/README.md) and requires WriteNpy to reproduce the
// version 1.0 ones byte for byte.
func TestNpyNumpyFiles(t *testing.T) {
	x := []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5}
	trunc := []float64{-2, -1, 0, 0, 1, 2} // numpy's float → int casts truncate
	for _, tc := range []struct {
		file      string
		want      DType
		shape     []int
		vals      []float64
		sameBytes bool
		err       string
	}{
		{"fp64.npy", 0, []int{2, 3}, x, true, ""},
		{"fp32.npy", 0, []int{2, 3}, x, true, ""},
		{"fp16.npy", 0, []int{2, 3}, x, true, ""},
		{"bf16.npy", BFloat16, []int{2, 3}, x, true, ""},
		{"int8.npy", 0, []int{2, 3}, trunc, true, ""},
		{"int32.npy", Int32, []int{2, 3}, trunc, true, ""},
		{"uint8.npy", 0, []int{3, 2}, []float64{0, 1, 2, 3, 4, 5}, true, ""},
		{"scalar.npy", Float16, nil, []float64{7}, true, ""},
		{"v2.npy", Float16, []int{2, 3}, x, false, ""},
		{"v3.npy", Float16, []int{2, 3}, x, false, ""},
		{"fortran.npy", 0, nil, nil, false, "fortran_order arrays are not supported"},
		{"big.npy", 0, nil, nil, false, `big-endian descr ">f4"`},
		{"i8.npy", 0, nil, nil, false, `unsupported descr "<i8"`},
		{"bf16.npy", 0, nil, nil, false, "descr '<u2' holds bf16 bit patterns only when the caller asks for bf16"},
	} {
		path := filepath.Join("testdata", "numpy", tc.file)
		got, err := ReadNpyFile(path, tc.want, ReadOptions{})
		if tc.err != "" {
			if want := path + ": " + tc.err; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("ReadNpyFile(%s, %v) error %v, want %q", path, tc.want, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadNpyFile(%s, %v): %v", path, tc.want, err)
			continue
		}
		if !got.SameShape(tc.shape) || !slices.Equal(got.Float64s(), tc.vals) {
			t.Errorf("ReadNpyFile(%s) = %v %v, want shape %v values %v", path, got, got.Float64s(), tc.shape, tc.vals)
		}
		if tc.sameBytes {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteNpy(&buf, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), raw) {
				t.Errorf("WriteNpy(%s) =\n%q\nnumpy wrote\n%q", path, buf.Bytes(), raw)
			}
		}
	}
}

func BenchmarkReadNpy(b *testing.B) {
	for _, d := range []DType{Float32, Float16} {
		x := MustNew(d, 1024, 1024)
		fillPatterns(x)
		var buf bytes.Buffer
		if err := WriteNpy(&buf, x); err != nil {
			b.Fatal(err)
		}
		raw := buf.Bytes()
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := ReadNpy(bytes.NewReader(raw), d, ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteNpy(b *testing.B) {
	for _, d := range []DType{Float32, Float16} {
		x := MustNew(d, 1024, 1024)
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(int64(x.Len() * d.Size()))
			for b.Loop() {
				if err := WriteNpy(io.Discard, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
