package ckernel

import (
	"slices"
	"testing"

	"github.com/npuverify/npuverify/ops"
)

// The dispatch table read from main.c names registered contracts only,
// and every op named is in scope with its default params: a misspelt
// entry or a table the reader no longer finds shows here, not as cases
// silently left out.
func TestOpsAreContracts(t *testing.T) {
	names := Ops()
	if len(names) == 0 {
		t.Fatal("the C kernel's dispatch table names no op")
	}
	for _, name := range names {
		if _, err := ops.Lookup(name); err != nil {
			t.Errorf("main.c dispatches %q: %v", name, err)
		}
		if !Supports(ops.Case{Op: name}) {
			t.Errorf("Supports(%s with default params) = false, want true: the kernel dispatches it", name)
		}
	}
	if Supports(ops.Case{Op: "no_such_op"}) {
		t.Error("Supports(no_such_op) = true, want false")
	}
	if Supports(ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp12"}}) {
		t.Error("Supports(vector_add dtype=fp12) = true, want false: the params do not validate")
	}
}

// Every value listed as unimplemented is one the op's contract allows, so
// that the list cannot hold a misspelling that scopes nothing out.
func TestUnimplementedAreContractValues(t *testing.T) {
	for op, params := range unimplemented {
		o, err := ops.Lookup(op)
		if err != nil {
			t.Errorf("unimplemented names op %q: %v", op, err)
			continue
		}
		for name, values := range params {
			i := slices.IndexFunc(o.ParamSpecs(), func(s ops.ParamSpec) bool { return s.Name == name })
			if i < 0 {
				t.Errorf("unimplemented names param %q of %s, which has none", name, op)
				continue
			}
			for _, v := range values {
				if !slices.Contains(o.ParamSpecs()[i].Values, v) {
					t.Errorf("unimplemented names %s=%s of %s, which its contract does not allow", name, v, op)
				}
			}
		}
	}
}
