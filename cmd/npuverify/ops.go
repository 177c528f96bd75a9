package main

import (
	"fmt"
	"io"
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
		op, err := opdb.Op(name)
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
// terms of the dims, as the op reports them for its default params.
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
	in, out, err := contract(op)
	if err != nil {
		fmt.Fprintf(w, "  inputs/outputs: (not derivable for default params: %v)\n", err)
		return
	}
	fmt.Fprintf(w, "  inputs (default params): %s\n", in)
	fmt.Fprintf(w, "  outputs (default params): %s\n", out)
}

// contract renders the op's inputs and outputs for its default params,
// with every shape dimension that equals a dim written by its name.
func contract(op ops.Op) (in, out string, err error) {
	p, err := op.Validate(ops.Params{})
	if err != nil {
		return "", "", err
	}
	// Distinct primes let shapes be mapped back to dim names.
	primes := []int{2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37}
	dims, names := map[string]int{}, map[int]string{}
	for i, d := range op.DimSpecs() {
		v := 41 + i
		if i < len(primes) {
			v = primes[i]
		}
		dims[d.Name], names[v] = v, d.Name
	}
	gen := ops.Gen{Dims: dims, Seed: 1}
	if ds := op.Dists(); len(ds) > 0 {
		gen.Dist = ds[0]
	}
	tensors, err := op.Generate(p, gen)
	if err != nil {
		return "", "", err
	}
	ins, err := op.Inputs(p, tensors)
	if err != nil {
		return "", "", err
	}
	outs, err := op.Outputs(p, tensors)
	if err != nil {
		return "", "", err
	}
	render := func(specs []ops.TensorSpec) string {
		parts := make([]string, len(specs))
		for i, s := range specs {
			sh := make([]string, len(s.Shape))
			for j, v := range s.Shape {
				if n, ok := names[v]; ok {
					sh[j] = n
				} else {
					sh[j] = strconv.Itoa(v)
				}
			}
			parts[i] = fmt.Sprintf("%s %s[%s]", s.Name, s.DType, strings.Join(sh, ","))
			if s.Optional {
				parts[i] += " (optional)"
			}
		}
		return strings.Join(parts, ", ")
	}
	return render(ins), render(outs), nil
}
