package ops

import "github.com/npuverify/npuverify/tensor"

// copyNumerics is the profile of an output element that is a copy of an
// input element (sparse24_prune's values, sparse_compress's rows): a copy
// moves bits and stores nothing through the device's profile, so neither
// the flush of subnormals nor the saturation of ±Inf and NaN applies. Under
// it the rounding of a value of the output's dtype is that value itself
// (tensor.Numerics.Round: round to nearest even keeps it, −0 included,
// and overflow=inf keeps ±Inf and NaN), so an exact element made with it
// (bound.NewExactFrom) accepts the copied value bit for bit: −0 ≠ +0,
// and a NaN as any NaN (bound.Identical).
var copyNumerics = tensor.Numerics{Overflow: tensor.OverflowInf, Subnormals: tensor.SubnormalKeep}
