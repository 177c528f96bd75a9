// Package kernels holds the operator kernels written against the npu
// programming model, one file per operator, and a registry that maps an
// operator name to the function that runs it. A kernel file registers
// itself in init, so a backend (backend.Emulator) picks up a new operator
// when its file is added.
package kernels

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// KernelFunc runs one operator on dev: it receives validated params and
// inputs held to the op's contract, must not modify the inputs, and
// returns every output of the contract by name with the launch's cost.
type KernelFunc func(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error)

var (
	mu       sync.RWMutex
	registry = map[string]KernelFunc{}
)

// Register adds fn as the kernel of operator name. It panics on an empty
// name, a nil fn or a duplicate name: programming errors caught at init.
func Register(name string, fn KernelFunc) {
	if name == "" || fn == nil {
		panic("kernels: Register with an empty name or nil func")
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("kernels: duplicate registration of " + name)
	}
	registry[name] = fn
}

// Lookup returns the kernel registered for operator name.
func Lookup(name string) (KernelFunc, error) {
	mu.RLock()
	fn, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no emulator kernel for op %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return fn, nil
}

// Names lists the operators that have a kernel, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

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
