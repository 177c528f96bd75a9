package explore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/ops"
)

// recipeElements is the input size above which a finding is written as a
// recipe (case.json with hashes, inputs regenerated from the seed) rather
// than with its .npy files; shrunk findings are almost always far smaller.
const recipeElements = 1 << 20

// Write adds the findings that came from the search (not those replayed
// from a store) to the store in dir (golden.Add: created with its marker
// when absent, other cases kept), their expected outputs recorded by
// recorder (the emulator, as golden update records them), and sets each
// one's Path, or its WriteError when the recorder cannot record it (e.g. a
// finding the recorder fails as well: a golden never records a wrong
// answer). It returns an error only when the store cannot be written.
func Write(ctx context.Context, dir string, recorder backend.Backend, findings []*Finding, w io.Writer) error {
	var cases []ops.Case
	var which []*Finding
	for _, f := range findings {
		if f.Replayed {
			continue
		}
		c := clone(f.Case)
		c.Recipe = inputElements(c) > recipeElements
		cases = append(cases, c)
		which = append(which, f)
	}
	if len(cases) == 0 {
		return nil
	}
	// The store first (a directory that is not one is refused here), then
	// each finding alone: one the recorder refuses must not keep the
	// others out.
	if _, err := golden.Add(ctx, dir, recorder, nil, io.Discard); err != nil {
		return err
	}
	for i, c := range cases {
		if _, err := golden.Add(ctx, dir, recorder, []ops.Case{c}, w); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			which[i].WriteError = err.Error()
			continue
		}
		which[i].Path = filepath.Join(dir, c.Op, c.Name)
	}
	return nil
}

// inputElements counts c's input elements (0 when it does not prepare).
func inputElements(c ops.Case) int {
	pc, ok := Legal(c, Limits{MaxElements: 1 << 40, MaxWork: 1 << 40})
	if !ok {
		return 0
	}
	n := 0
	for _, t := range pc.Inputs {
		n += t.Len()
	}
	return n
}

// ReplayHint is the command line that replays a written finding.
func ReplayHint(dir string, c ops.Case, backendFlag string) string {
	return fmt.Sprintf("npuverify check --golden %s --run '^%s/%s$' --backend %s", dir, c.Op, c.Name, backendFlag)
}
