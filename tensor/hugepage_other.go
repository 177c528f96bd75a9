//go:build !linux

package tensor

// adviseHuge does nothing here: huge-page advice is Linux's.
func adviseHuge([]byte) {}

// GrowHeapHuge does nothing here: huge-page advice is Linux's.
func GrowHeapHuge(int) {}
