package ops

import (
	"fmt"
	"slices"
)

// validate checks p against op's ParamSpecs: unknown names and values
// outside a spec's Values are errors naming the parameter; missing ones
// take their defaults. Ops with numeric parameters check those themselves
// after calling it.
func validate(op Op, p Params) (Params, error) {
	out := Params{}
	specs := op.ParamSpecs()
	for k := range p {
		if !slices.ContainsFunc(specs, func(s ParamSpec) bool { return s.Name == k }) {
			names := make([]string, len(specs))
			for i, s := range specs {
				names[i] = s.Name
			}
			return nil, fmt.Errorf("%s: unknown param %q (want one of %v)", op.Name(), k, names)
		}
	}
	for _, s := range specs {
		v, ok := p[s.Name]
		if !ok {
			if s.Default == "" {
				continue
			}
			v = s.Default
		}
		if s.Values != nil && !slices.Contains(s.Values, v) {
			return nil, fmt.Errorf("%s: param %q: invalid value %q (want one of %v)", op.Name(), s.Name, v, s.Values)
		}
		out[s.Name] = v
	}
	return out, nil
}

// dim returns a generation size, which must be present and non-negative.
func dim(op Op, g Gen, name string) (int, error) {
	v, ok := g.Dims[name]
	if !ok {
		return 0, fmt.Errorf("%s: generation size %q is missing", op.Name(), name)
	}
	if v < 0 {
		return 0, fmt.Errorf("%s: generation size %q = %d is negative", op.Name(), name, v)
	}
	return v, nil
}
