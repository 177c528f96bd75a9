//go:build unix

package verify_test

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// cpuTime is the CPU time the process has used (user and system): on a
// shared machine, the work a benchmark did whatever else ran.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompute is Compute on vector_add's output for 2^22 seeded
// standard normal fp16 inputs, correctly rounded: against the compact
// Expected vector_add's Expect makes, and against the same materialized.
func BenchmarkCompute(b *testing.B) {
	const n = 1 << 22
	r := rand.New(rand.NewPCG(1, 2))
	x, y, got := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		y.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		got.SetFloat64(i, x.Float64(i)+y.Float64(i), tensor.Numerics{})
	}
	p, err := ops.VectorAdd.Validate(ops.Params{"dtype": "fp16"})
	if err != nil {
		b.Fatal(err)
	}
	exp, err := ops.VectorAdd.Expect(p, map[string]*tensor.Tensor{"x": x, "y": y}, tensor.Numerics{})
	if err != nil {
		b.Fatal(err)
	}
	compact := exp["z"]
	full := *compact
	full.Materialize()
	for _, c := range []struct {
		name string
		want *bound.Expected
	}{{"vector_add", compact}, {"materialized", &full}} {
		b.Run(c.name, func(b *testing.B) {
			c0 := cpuTime()
			for b.Loop() {
				verify.Compute(got, c.want)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/n, "cpu-ns/elem")
		})
	}
}
