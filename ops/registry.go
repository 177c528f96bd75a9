package ops

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// registry holds every contract by name. The contracts register
// themselves (each op's file here), so whoever links package ops can look
// any of them up: the harness, the golden store and the exec backend judge
// an op by its contract alone, without the records of package opdb (the
// emulated kernels, fault catalogues, samples) that sit above them.
var registry = map[string]Op{}

// Register adds op to the contract registry and returns it. It panics on
// a nil op or a duplicate name: programming errors caught at init.
func Register(op Op) Op {
	if op == nil {
		panic("ops: Register with a nil contract")
	}
	name := op.Name()
	if _, dup := registry[name]; dup {
		panic("ops: duplicate registration of " + name)
	}
	registry[name] = op
	return op
}

// Lookup returns the contract of the op with that name; an unknown name is
// an error listing the known ones.
func Lookup(name string) (Op, error) {
	op, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown op %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return op, nil
}

// Names lists the registered op names, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }
