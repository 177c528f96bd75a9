package ops

import (
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// GEMMExpectInterval is gemm's Expect with every element on the interval
// path (no fastElement), for ops_test's agreement test over the golden
// cases (package golden imports ops, so that test cannot live here).
func GEMMExpectInterval(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	return gemm{}.expectLayout(p, in, num, true)
}

// GEMMFastElements counts the elements of a gemm case that Expect takes
// on the fast path, so that the agreement test can show it compared some.
func GEMMFastElements(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (int, error) {
	if !gemmConfig(p).Layout.ND() {
		var err error
		if p, in, _, _, err = (gemm{}).toND(p, in); err != nil {
			return 0, err
		}
	}
	m, k, n, err := GEMMDims(in)
	if err != nil {
		return 0, err
	}
	ev, err := newGEMMEval(gemmConfig(p), k, num)
	if err != nil {
		return 0, err
	}
	d, s := make([]float64, m*n), make([]float64, m*n)
	reference.MatMulTensors(in["a"], in["b"], d, s)
	cnt := 0
	for i := range d {
		if _, _, _, ok := ev.fastElement(d[i], s[i]); ok {
			cnt++
		}
	}
	return cnt, nil
}
