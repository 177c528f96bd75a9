package ops

// CaseFitter is implemented by an op whose params and dims constrain each
// other beyond what ParamSpecs and DimSpecs say one by one (transdata:
// the legal format pairs, the extents of one pair family, the dims a
// format needs). A generator that draws every param and dim on its own
// (explore) hands each draw to Fit, which changes it into a legal case
// close to it, so that the draws are spent on cases rather than
// discarded: drawn independently, fewer than 1 transdata case in 100 was
// legal.
type CaseFitter interface {
	// Fit changes the params p and dims of a drawn case in place into a
	// legal combination, keeping every drawn value the contract allows
	// there. It removes what does not apply and draws a dim that must be
	// present but is not with size (the generator's own distribution), so
	// it adds no randomness of its own.
	Fit(p Params, dims map[string]int, size func(dim string) int)
}
