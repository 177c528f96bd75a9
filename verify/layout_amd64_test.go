//go:build amd64 && !purego

package verify

import (
	"testing"
	"unsafe"
)

// TestAsmLayouts holds the offsets the assembly reads and writes
// (bound_run_amd64.s, terms_amd64.s) to the Go structs, so that a field
// added or removed on one side alone fails here, not as wrong figures.
func TestAsmLayouts(t *testing.T) {
	var b boundRunVec
	var e exactRunVec
	var l leanVec
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"boundRunVec.relSkip", unsafe.Offsetof(b.relSkip), 0},
		{"boundRunVec.floor", unsafe.Offsetof(b.floor), 32},
		{"boundRunVec.floor2", unsafe.Offsetof(b.floor2), 64},
		{"boundRunVec.umin", unsafe.Offsetof(b.umin), 96},
		{"boundRunVec.umax", unsafe.Offsetof(b.umax), 128},
		{"boundRunVec.uscale", unsafe.Offsetof(b.uscale), 160},
		{"boundRunVec.maxAbs", unsafe.Offsetof(b.maxAbs), 192},
		{"boundRunVec.tight", unsafe.Offsetof(b.tight), 224},
		{"boundRunVec.counts", unsafe.Offsetof(b.counts), 256},
		{"exactRunVec.relSkip", unsafe.Offsetof(e.relSkip), 160},
		{"exactRunVec.floor", unsafe.Offsetof(e.floor), 192},
		{"exactRunVec.floor2", unsafe.Offsetof(e.floor2), 224},
		{"exactRunVec.shift", unsafe.Offsetof(e.shift), 256},
		{"exactRunVec.maxAbs", unsafe.Offsetof(e.maxAbs), 288},
		{"exactRunVec.tight", unsafe.Offsetof(e.tight), 320},
		{"exactRunVec.zeros", unsafe.Offsetof(e.zeros), 352},
		{"exactRunVec.relMax", unsafe.Offsetof(e.relMax), 384},
		{"exactRunVec.maxV", unsafe.Offsetof(e.maxV), 416},
		{"leanVec.limit", unsafe.Offsetof(l.limit), 32},
		{"leanVec.half", unsafe.Offsetof(l.half), 64},
		{"leanVec.mask", unsafe.Offsetof(l.mask), 96},
		{"leanVec.min", unsafe.Offsetof(l.min), 128},
		{"leanVec.shift", unsafe.Offsetof(l.shift), 160},
		{"leanVec.one", unsafe.Offsetof(l.one), 192},
		{"leanVec.guard", unsafe.Offsetof(l.guard), 224},
		{"leanVec.sums", unsafe.Offsetof(l.sums), 256},
		{"leanVec.maxE", unsafe.Offsetof(l.maxE), 416},
		{"leanVec.maxR", unsafe.Offsetof(l.maxR), 448},
		{"leanVec.mare", unsafe.Offsetof(l.mare), 480},
		{"leanVec.zeros", unsafe.Offsetof(l.zeros), 512},
	} {
		if c.got != c.want {
			t.Errorf("verify: offset of %s = %d, want %d (the assembly's)", c.name, c.got, c.want)
		}
	}
}
