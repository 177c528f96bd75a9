package report

import (
	"slices"
	"strings"

	"github.com/npuverify/npuverify/harness"
)

// The report explains itself where a reader stops (issue 33): what counts
// towards the verdict, and, under each table, the figures that look
// alarming and are not. The sentences live here so that the Markdown and
// the HTML report say the same; each is shown only where its figure is on
// the page, so a note never explains what the reader cannot see.

// verdictNote says what decides the run's verdict and exit code, right
// under the totals: the green "No case fails." sits above sections with
// red cells (the performance checklist) that do not count.
const verdictNote = "What counts towards the verdict and the exit code: the verdict of each case below (accuracy against " +
	"its policy and the checks beside it; nondeterministic, slower or inefficient where check judged those), nothing else. " +
	"The performance checklist, the studies (GEMM precision modes, attention quality, incremental decoding) and the plots " +
	"are information: a red cell there never fails the run."

// noFailNote is shown in place of the failing cases when there are none.
const noFailNote = "No case fails: the run passes."

// perfNote heads the performance checklist: its fails are targets for
// tuning, not verdicts.
const perfNote = "Not part of the verdict: a fail here is a cost-model target the case misses (information for tuning); " +
	"it never changes the exit code. check --baseline and --min-efficiency are what judge a kernel's speed."

// precisionNote sits under the GEMM precision-mode table, whose cancel
// rows show relative errors of 10^5 and cosines far below 1 beside "pass".
const precisionNote = "Max rel err, MERE and cosine are measured against the float64 product, and where that product is near " +
	"zero (the cancel distribution: sums that cancel) a tiny absolute error is a huge relative one and the cosine drops: " +
	"expected, and not the criterion. The verdict is the bound column: every element within the mode's own rigorous " +
	"error bound (docs/accuracy.md), with its tightness."

// casesNote sits under the index of cases: a FAIL beside a tightness of
// at most 1 is not a contradiction.
const casesNote = "Tightness is max |err|/bound over the outputs: within bound up to 1, exactly 1 at a tie. A case can fail " +
	"with tightness ≤ 1 when what failed is not the bound (a non-finite class mismatch, a bit-exact or budget check): the " +
	"reason column says what."

// matrixNotes are the lines under the summary matrix for what it shows:
// the "—" column, a tightness of exactly 1 (a tie) and of 0 (exact).
func matrixNotes(m *Matrix) []string {
	var out []string
	if slices.Contains(m.Variants, "—") {
		out = append(out, "The — column holds the cases that name neither a dtype nor a mode: ops that select or copy values "+
			"(judged bit for bit) rather than compute them in a precision.")
	}
	worst := func(x float64) bool {
		return slices.ContainsFunc(m.Cells, func(c Cell) bool { return float64(c.Worst) == x })
	}
	if worst(1) {
		out = append(out, "A worst tightness of exactly 1 uses the whole bound and passes (the bound is inclusive), not a near "+
			"miss: for an element-wise op it is a tie, an element exactly halfway between two representable values, rounded "+
			"either way (docs/accuracy.md, Tightness).")
	}
	if worst(0) {
		out = append(out, "A tightness of 0 means every compared element is exact (integer outputs, selections, copies).")
	}
	return out
}

// reasonOf is the reason shown beside a case that did not pass ("" for
// one that did): the first line of Why.
func reasonOf(c *Case) string {
	if c.Verdict == harness.VerdictPass {
		return ""
	}
	return strings.TrimSuffix(firstLine(c.Why()), " …")
}
