package tensor

import (
	"encoding/binary"
	"unsafe"
)

// The .npy data of every dtype here is its elements' little-endian bytes,
// which on a little-endian host are the bytes of the element slice itself:
// there the data is read straight into the tensor's memory and written
// straight from it, a chunk at a time, with no per-element decoding.
// Elsewhere each element is decoded and encoded (npy.go, npy_read.go).

// hostLittleEndian is whether the host stores numbers little-endian.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// rawBytes returns the memory of s as bytes (size bytes per element: the
// element type's size, which is the dtype's item size for every element
// type a tensor holds).
func rawBytes[T any](s []T, size int) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*size)
}
