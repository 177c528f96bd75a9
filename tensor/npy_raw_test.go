package tensor

import (
	"bytes"
	"testing"
)

// TestNpyRawMatchesPortable holds the little-endian fast path of .npy
// reading and writing (the element slice's own bytes) to the per-element
// encoding and decoding it replaces on such hosts, for every dtype, at
// sizes around the chunk: the same file bytes written, the same element
// bits read back, and a truncated or overlong stream rejected by both with
// the same message.
func TestNpyRawMatchesPortable(t *testing.T) {
	if !hostLittleEndian {
		t.Skip("the raw path runs on little-endian hosts only")
	}
	defer func() { hostLittleEndian = true }()
	for _, d := range DTypes() {
		for _, n := range []int{0, 1, 3, npyChunk/d.Size() - 1, npyChunk/d.Size() + 5, 3*npyChunk/d.Size() + 1} {
			x := MustNew(d, n)
			fillPatterns(x)
			var raw, portable bytes.Buffer
			hostLittleEndian = true
			if err := WriteNpy(&raw, x); err != nil {
				t.Fatal(err)
			}
			hostLittleEndian = false
			if err := WriteNpy(&portable, x); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw.Bytes(), portable.Bytes()) {
				t.Fatalf("tensor WriteNpy %s n=%d: the raw bytes differ from the per-element encoding", d, n)
			}
			for _, le := range []bool{true, false} {
				hostLittleEndian = le
				got, err := ReadNpy(bytes.NewReader(raw.Bytes()), d, ReadOptions{})
				if err != nil {
					t.Fatalf("tensor ReadNpy %s n=%d raw=%v: %v", d, n, le, err)
				}
				if ok, i := BitsEqual(got, x); !ok {
					t.Fatalf("tensor ReadNpy %s n=%d raw=%v: element %d: got bits %#x / want %#x", d, n, le, i, got.Bits(i), x.Bits(i))
				}
			}
			if n == 0 {
				continue
			}
			// A stream whose length is not known beforehand (no Len) that
			// ends early, and a known-length one read where the header is
			// not followed by the whole data: the messages agree.
			short := raw.Bytes()[:raw.Len()-1]
			var msgs []string
			for _, le := range []bool{true, false} {
				hostLittleEndian = le
				_, err := readNpy(bytes.NewReader(short), d, ReadOptions{}, -1)
				_, err2 := readNpyData[byte](bytes.NewReader(short[:5]), 10, le, 1, func(dst, src []byte) { copy(dst, src) })
				if err == nil || err2 == nil {
					t.Fatalf("tensor readNpy %s n=%d raw=%v: truncated stream accepted", d, n, le)
				}
				msgs = append(msgs, err.Error()+" / "+err2.Error())
			}
			if msgs[0] != msgs[1] {
				t.Fatalf("tensor readNpy %s n=%d: raw path says %q / portable %q", d, n, msgs[0], msgs[1])
			}
		}
	}
}
