package mutation

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/internal/panicguard/panictest"
	"github.com/npuverify/npuverify/npu/kernels"
)

// TestRunRaisesAWorkersPanicOnTheCaller (issue 33, the panic guard): the
// faults and variants are scored on worker goroutines; a panic in one
// killed the process out of reach of the CLI's recover. Run raises it
// again on its caller's goroutine once every worker has stopped. The
// panic here is a suite case with nothing prepared, run by the correct
// emulator's false-alarm job.
func TestRunRaisesAWorkersPanicOnTheCaller(t *testing.T) {
	for _, workers := range []int{1, 3} {
		opt := Options{Cases: []*SuiteCase{{ID: "broken"}, {ID: "broken too"}}, Faults: []kernels.FaultInfo{}, NoVariants: true, Workers: workers}
		panictest.Raised(t, "mutation.Run on a suite case with no Prepared", "nil pointer dereference", "mutation.RunCase", func() {
			Run(context.Background(), opt)
		})
	}
}
