//go:build linux

package tensor

import "testing"

// TestGrowHeapHugeOnce holds GrowHeapHuge to growing the heap once for a
// size: a second call for no more bytes allocates nothing (it would clear
// reused memory, not take fresh), a call for more grows it again.
func TestGrowHeapHugeOnce(t *testing.T) {
	const n = 8 << 20
	GrowHeapHuge(n + int(heapGrown.Load()))
	grown := int(heapGrown.Load())
	if a := testing.AllocsPerRun(3, func() { GrowHeapHuge(grown) }); a != 0 {
		t.Errorf("GrowHeapHuge(%d) after GrowHeapHuge(%d): %v allocations / want 0", grown, grown, a)
	}
	if a := testing.AllocsPerRun(3, func() { GrowHeapHuge(grown - n) }); a != 0 {
		t.Errorf("GrowHeapHuge(%d) after GrowHeapHuge(%d): %v allocations / want 0", grown-n, grown, a)
	}
	GrowHeapHuge(grown + n)
	if got := int(heapGrown.Load()); got != grown+n {
		t.Errorf("GrowHeapHuge(%d) after GrowHeapHuge(%d): heap grown by %d / want %d", grown+n, grown, got, grown+n)
	}
}
