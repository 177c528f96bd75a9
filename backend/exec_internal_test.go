package backend

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestTailBufferKeepsBoundedTail(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, max := range []int{1, 7, 64, 1000} {
		tb := newTailBuffer(max)
		var all []byte
		for i := 0; i < 500; i++ {
			p := make([]byte, r.IntN(3*max+2))
			for j := range p {
				p[j] = byte('a' + r.IntN(26))
			}
			if n, err := tb.Write(p); n != len(p) || err != nil {
				t.Fatalf("max=%d: Write(%d bytes): got %d, %v, want %d, nil", max, len(p), n, err, len(p))
			}
			all = append(all, p...)
			want := all[max0(len(all)-max):]
			if got := tb.Tail(); !bytes.Equal(got, want) {
				t.Fatalf("max=%d after %d writes: got tail %q, want %q", max, i+1, got, want)
			}
			if cap(tb.buf) > 3*max+64 { // 2·max, rounded up to an allocation size class
				t.Fatalf("max=%d: got buffer capacity %d, want about 2·max", max, cap(tb.buf))
			}
		}
		if tb.Total() != int64(len(all)) {
			t.Errorf("max=%d: got Total %d, want %d", max, tb.Total(), len(all))
		}
	}
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

func TestTailBufferQuote(t *testing.T) {
	tb := newTailBuffer(1 << 10)
	if got := tb.Quote("stderr"); got != "stderr: (empty)" {
		t.Errorf("empty: got %q, want %q", got, "stderr: (empty)")
	}
	tb.Write([]byte("one\ntwo\n"))
	if got, want := tb.Quote("stderr"), "stderr (8 bytes):\n  | one\n  | two"; got != want {
		t.Errorf("two lines: got %q, want %q", got, want)
	}
	tb.Write([]byte(strings.Repeat("x", 5000) + "\n"))
	got := tb.Quote("stderr")
	if !strings.HasPrefix(got, "stderr (5009 bytes, last 1023 shown):\n  | xxx") || len(got) > 1100 {
		t.Errorf("long line: got %q, want the last 1023 bytes of 5009", got)
	}
}

func TestMedianAndFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{5}, 5}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v): got %g, want %g", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{60 * time.Second, "60s"}, {time.Second, "1s"}, {1500 * time.Millisecond, "1.5s"}, {250 * time.Millisecond, "250ms"}} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%v): got %q, want %q", tc.d, got, tc.want)
		}
	}
}
