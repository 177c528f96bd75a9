package npu

import (
	"fmt"

	"github.com/npuverify/npuverify/tensor"
)

// Workspace allocates n elements of dt in GM as a launch's scratch, the
// emulator's counterpart of Ascend C's user workspace (the host reserves
// it, the kernel reaches it with GetUserWorkspace): a kernel whose
// intermediate does not fit its local memory spills it to GM and reads it
// back through the ordinary DataCopy primitives, which charge every byte
// of that traffic like any other GM transfer. The elements are Poison
// until written, so reading scratch the kernel never wrote is visible.
func (d *Device) Workspace(dt tensor.DType, n int) (*tensor.Tensor, error) {
	if !dt.Valid() {
		return nil, fmt.Errorf("workspace: invalid dtype %d", uint8(dt))
	}
	t, err := tensor.New(dt, n)
	if err != nil {
		return nil, fmt.Errorf("workspace of %d %s elements: %w", n, dt, err)
	}
	b, _ := gmBytes(t)
	fill(b, Poison)
	return t, nil
}
