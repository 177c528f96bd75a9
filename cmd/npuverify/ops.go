package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

func cmdOps(args []string, stdout io.Writer) error {
	fs := newFlagSet("ops", "ops", stdout)
	pos, err := parse(fs, "ops", args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("ops", "unexpected argument %q", pos[0])
	}
	for i, name := range opdb.Names() {
		op, err := ops.Lookup(name)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		describeOp(stdout, op)
	}
	return nil
}

// describeOp prints an op's contract. Input and output shapes are shown in
// terms of the dims, as the op reports them for its default params; an op
// whose dims are constrained (k a multiple of 4, hq a multiple of h) is
// shown on its first golden case instead, with concrete sizes.
func describeOp(w io.Writer, op ops.Op) {
	fmt.Fprintf(w, "%s: %s\n", op.Name(), op.Doc())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  param\tdefault\tvalues\tdoc\n")
	for _, p := range op.ParamSpecs() {
		def, vals := p.Default, strings.Join(p.Values, "|")
		if def == "" {
			def = "—"
		}
		if vals == "" {
			vals = "(number)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, def, vals, p.Doc)
	}
	tw.Flush()
	var dims []string
	for _, d := range op.DimSpecs() {
		dims = append(dims, fmt.Sprintf("%s (%s)", d.Name, d.Doc))
	}
	fmt.Fprintf(w, "  dims: %s\n", strings.Join(dims, ", "))
	fmt.Fprintf(w, "  dists: %s\n", strings.Join(op.Dists(), ", "))
	if in, out, err := symbolicContract(op); err == nil {
		fmt.Fprintf(w, "  inputs (default params): %s\n", in)
		fmt.Fprintf(w, "  outputs (default params): %s\n", out)
		return
	}
	c, in, out, err := exampleContract(op)
	if err != nil {
		fmt.Fprintf(w, "  inputs/outputs: (not derivable: %v)\n", err)
		return
	}
	what := "dims " + dimList(c.Dims)
	if len(c.Params) > 0 {
		what = c.Params.String() + ", " + what
	}
	fmt.Fprintf(w, "  inputs (golden case %s: %s): %s\n", c.Name, what, in)
	fmt.Fprintf(w, "  outputs (golden case %s): %s\n", c.Name, out)
}

// dimList renders dims as sorted k=v pairs.
func dimList(d map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, d[k]))
	}
	return strings.Join(parts, " ")
}

// primeDims assigns the op's dims the distinct primes ps (one per dim),
// so that a shape dimension equal to one of them can be named.
func primeDims(op ops.Op, ps []int) (map[string]int, map[int]string) {
	dims, names := map[string]int{}, map[int]string{}
	for i, d := range op.DimSpecs() {
		dims[d.Name], names[ps[i]] = ps[i], d.Name
	}
	return dims, names
}

// primes returns the first n primes.
func primes(n int) []int {
	ps := make([]int, 0, n)
	for v := 2; len(ps) < n; v++ {
		if !slices.ContainsFunc(ps, func(p int) bool { return v%p == 0 }) {
			ps = append(ps, v)
		}
	}
	return ps
}

// specsFor returns the op's input and output contract for params p on
// inputs generated with dims.
func specsFor(op ops.Op, p ops.Params, dims map[string]int) (ins, outs []ops.TensorSpec, err error) {
	gen := ops.Gen{Dims: dims, Seed: 1}
	if ds := op.Dists(); len(ds) > 0 {
		gen.Dist = ds[0]
	}
	tensors, err := op.Generate(p, gen)
	if err != nil {
		return nil, nil, err
	}
	if ins, err = op.Inputs(p, tensors); err != nil {
		return nil, nil, err
	}
	if outs, err = op.Outputs(p, tensors); err != nil {
		return nil, nil, err
	}
	return ins, outs, nil
}

// symbolicContract renders the op's inputs and outputs for its default
// params with every shape dimension written by its dim's name. Shapes are
// derived twice, with two sets of distinct primes as dims; a dimension is
// named only when both derivations name the same dim (so a derived size
// that happens to equal a prime, keep = 2 say, is not mistaken for a dim)
// and written as a number when both agree on it, else as "?".
func symbolicContract(op ops.Op) (in, out string, err error) {
	p, err := op.Validate(ops.Params{})
	if err != nil {
		return "", "", err
	}
	// The two sets are the op's first and next len(dims) primes: disjoint,
	// and small enough that the inputs stay small (kv_update's caches are
	// a product of four dims).
	ps := primes(2 * len(op.DimSpecs()))
	dimsA, namesA := primeDims(op, ps[:len(ps)/2])
	dimsB, namesB := primeDims(op, ps[len(ps)/2:])
	insA, outsA, err := specsFor(op, p, dimsA)
	if err != nil {
		return "", "", err
	}
	insB, outsB, err := specsFor(op, p, dimsB)
	if err != nil {
		return "", "", err
	}
	render := func(a, b []ops.TensorSpec) string {
		parts := make([]string, len(a))
		for i, s := range a {
			sh := make([]string, len(s.Shape))
			for j, v := range s.Shape {
				vb := -1
				if i < len(b) && j < len(b[i].Shape) {
					vb = b[i].Shape[j]
				}
				switch n, ok := namesA[v]; {
				case ok && namesB[vb] == n:
					sh[j] = n
				case v == vb:
					sh[j] = strconv.Itoa(v)
				default:
					sh[j] = "?"
				}
			}
			parts[i] = fmt.Sprintf("%s %s[%s]", s.Name, s.DType, strings.Join(sh, ","))
			if s.Optional {
				parts[i] += " (optional)"
			}
		}
		return strings.Join(parts, ", ")
	}
	return render(insA, insB), render(outsA, outsB), nil
}

// exampleContract renders the op's inputs and outputs, with concrete
// shapes, on its first golden case that is not a recipe.
func exampleContract(op ops.Op) (c ops.Case, in, out string, err error) {
	info, err := opdb.Lookup(op.Name())
	if err != nil || info.GoldenCases == nil {
		return c, "", "", fmt.Errorf("%s: no golden case to show", op.Name())
	}
	for _, gc := range info.GoldenCases() {
		if gc.Recipe {
			continue
		}
		p, err := op.Validate(gc.Params)
		if err != nil {
			return c, "", "", err
		}
		ins, outs, err := specsFor(op, p, gc.Dims)
		if err != nil {
			return c, "", "", err
		}
		render := func(specs []ops.TensorSpec) string {
			parts := make([]string, len(specs))
			for i, s := range specs {
				parts[i] = fmt.Sprintf("%s %s%v", s.Name, s.DType, s.Shape)
				if s.Optional {
					parts[i] += " (optional)"
				}
			}
			return strings.Join(parts, ", ")
		}
		gc.Params = p
		return gc, render(ins), render(outs), nil
	}
	return c, "", "", fmt.Errorf("%s: no stored golden case", op.Name())
}
