package explore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/npuverify/npuverify/ops"
)

// Shrinking (Hypothesis-style). From a failing case, candidates are tried
// in order, smallest change first:
//
//  1. each dim toward smaller values: its minimum, half, ¾, v minus each
//     power of two, the largest
//     device boundary below it (keeping the boundary structure), minus a
//     fractal (keeping the value mod 16), minus one; an optional dim
//     dropped; a dim others are multiples of (decode_attention's h) takes
//     them along at the same ratio;
//  2. each param back to its default, one at a time;
//  3. the distribution toward simpler ones: uniform, then those listed
//     before it in the op's Dists;
//
// and the seed is kept. The first candidate that is legal (Legal) and still
// fails the same way is kept, and the candidates start over from it; when
// none does, the case is minimal. "The same way" means one of the failing
// output:check pairs of the current case (or its kind: a backend error,
// an Extra failure) still fails: a step that turns a wrong output into a
// crash, or one output's failure into another's, is a different bug and is
// not taken. Shrinking stops early after MaxShrinkRuns runs or ShrinkTime.

// shrink returns the finding for failing case c with verdict v.
func (s *search) shrink(ctx context.Context, c ops.Case, v verdict) *Finding {
	f := &Finding{Found: c, Case: c, Kind: v.kind, Signature: v.sig, Message: v.message, Outcome: v.outcome}
	maxRuns := cmp0(s.opt.MaxShrinkRuns, 500)
	limit := s.opt.ShrinkTime
	if limit <= 0 {
		limit = 60 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	op, err := ops.Lookup(c.Op)
	if err != nil {
		return f
	}
	cur := v
	for improved := true; improved; {
		improved = false
		for _, cand := range candidates(op, f.Case, s.opt.Device) {
			if f.ShrinkRuns >= maxRuns || sctx.Err() != nil {
				return f
			}
			pc, ok := Legal(cand, s.opt.Limits)
			if !ok {
				continue
			}
			f.ShrinkRuns++
			nv, ok, err := s.judge(sctx, pc)
			if err != nil || !ok || !nv.fail || nv.kind != cur.kind || !overlaps(nv.sig, cur.sig) {
				continue
			}
			cur = nv
			f.Case, f.Signature, f.Message, f.Outcome = cand, nv.sig, nv.message, nv.outcome
			f.ShrinkSteps++
			improved = true
			break
		}
	}
	return f
}

// overlaps reports whether two sorted signatures share an entry.
func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// candidates lists the one-step simplifications of c, smallest first
// within each kind (see "Shrinking").
func candidates(op ops.Op, c ops.Case, dev Device) []ops.Case {
	var out []ops.Case
	specs := op.DimSpecs()
	bounds := Boundaries(dev)
	for _, d := range specs {
		v, ok := c.Dims[d.Name]
		if !ok {
			continue
		}
		if d.Optional {
			n := clone(c)
			delete(n.Dims, d.Name)
			out = append(out, n)
		}
		for _, w := range smaller(d, v, c.Dims, bounds) {
			n := clone(c)
			n.Dims[d.Name] = w
			// Dims that are multiples of this one keep their ratio.
			for _, e := range specs {
				if e.MultipleOf == d.Name && v > 0 {
					if x, ok := n.Dims[e.Name]; ok {
						n.Dims[e.Name] = max(x/v, 1) * max(w, 1)
					}
				}
			}
			out = append(out, n)
		}
	}
	for _, p := range op.ParamSpecs() {
		if _, ok := c.Params[p.Name]; ok {
			n := clone(c)
			delete(n.Params, p.Name)
			out = append(out, n)
		}
	}
	dists := op.Dists()
	if i := slices.Index(dists, c.Dist); i > 0 {
		simpler := []string{ops.DistUniform}
		simpler = append(simpler, dists[:i]...)
		seen := map[string]bool{c.Dist: true}
		for _, d := range simpler {
			if seen[d] || !slices.Contains(dists, d) {
				continue
			}
			seen[d] = true
			n := clone(c)
			n.Dist = d
			out = append(out, n)
		}
	} else if i < 0 && slices.Contains(dists, ops.DistUniform) {
		n := clone(c)
		n.Dist = ops.DistUniform
		out = append(out, n)
	}
	return out
}

// smaller lists legal values of dim d below v, smallest first: the
// minimum, half, three quarters, the largest boundary below v, v minus a fractal, v − 1
// (each held to the spec's multiple; a dim that is a multiple of another
// steps in that dim's units).
func smaller(d ops.DimSpec, v int, dims map[string]int, bounds []int) []int {
	step := 1
	if d.Multiple > 1 {
		step = d.Multiple
	}
	if d.MultipleOf != "" {
		step = max(dims[d.MultipleOf], 1)
	}
	floor := func(x int) int { return x / step * step }
	lo := max(d.Min, 0)
	if lo%step != 0 {
		lo += step - lo%step
	}
	var cands []int
	cands = append(cands, lo, floor(v/2), floor(v/4*3))
	if i, _ := slices.BinarySearch(bounds, v); i > 0 {
		cands = append(cands, floor(bounds[i-1]))
	}
	cands = append(cands, floor(v-16), v-step)
	for dec := 2 * step; dec < v; dec *= 2 {
		// v minus powers of two: the smallest still-failing one is found
		// in O(log² v) runs rather than v/16.
		cands = append(cands, floor(v-dec))
	}
	if v <= 16*step {
		// Small: every legal value below, so that a failure that needs
		// an odd size (or any residue) still reaches the smallest one.
		for x := lo; x < v; x += step {
			cands = append(cands, x)
		}
	}
	var out []int
	for _, x := range cands {
		if x >= lo && x < v && x%step == 0 && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// clone copies c deeply enough to change its dims and params.
func clone(c ops.Case) ops.Case {
	n := c
	n.Params = c.Params.Clone()
	n.Dims = maps.Clone(c.Dims)
	n.Labels = slices.Clone(c.Labels)
	return n
}
