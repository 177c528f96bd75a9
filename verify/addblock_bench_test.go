package verify

import (
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkAddBlock times the element loops of Compute on one block of
// 2048 exact fp16 sums, correctly rounded: addBlock on an ordinary
// Expected, and Load, which fills a window of a compact one.
func BenchmarkAddBlock(b *testing.B) {
	const n = 2048
	r := rand.New(rand.NewPCG(1, 2))
	e := bound.NewExpected(n)
	gv := make([]float64, n)
	for i := range n {
		x := tensor.Numerics{}.Round(r.NormFloat64(), tensor.Float16) + tensor.Numerics{}.Round(r.NormFloat64(), tensor.Float16)
		e.SetExact(i, x, tensor.Float16, tensor.Numerics{})
		gv[i] = e.Rounded[i]
	}
	var v bound.View
	e.Load(&v, 0, n)
	f, _ := tensor.Float16.FloatFormat()
	b.Run("addBlock", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			p := newMetricsPart()
			p.addBlock(tensor.Float16, f, true, gv, &v, 0)
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/n, "cpu-ns/elem")
	})
	c := bound.NewExactFrom(n, tensor.Float16, tensor.Numerics{}, func(off int, dst []float64) { copy(dst, e.Ref[off:]) })
	b.Run("load", func(b *testing.B) {
		var w bound.View
		c0 := cpuTime()
		for b.Loop() {
			c.Load(&w, 0, n)
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/n, "cpu-ns/elem")
	})
}
