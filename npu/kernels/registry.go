// Package kernels holds the operator kernels written against the npu
// programming model, one file per operator (with its fault catalogue in
// fault_<op>.go). Each op's KernelFunc is listed in the op's record in
// package opdb, through which emulator.Emulator finds it.
package kernels

import (
	"context"
	"fmt"
	"strings"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// KernelFunc runs one operator on dev: it receives validated params and
// inputs held to the op's contract, must not modify the inputs, and
// returns every output of the contract by name with the launch's cost.
type KernelFunc func(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error)

// input returns in[name] or an error naming the op and the input.
func input(op string, in map[string]*tensor.Tensor, name string) (*tensor.Tensor, error) {
	t := in[name]
	if t == nil {
		return nil, fmt.Errorf("%s: input %q is missing", op, name)
	}
	return t, nil
}

// onlyInputs rejects inputs not in names.
func onlyInputs(op string, in map[string]*tensor.Tensor, names ...string) error {
	for n := range in {
		known := false
		for _, k := range names {
			known = known || n == k
		}
		if !known {
			return fmt.Errorf("%s: unknown input %q (want %s)", op, n, strings.Join(names, ", "))
		}
	}
	return nil
}
