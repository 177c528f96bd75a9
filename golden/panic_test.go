package golden

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/internal/panicguard/panictest"
)

// TestCheckRaisesAWorkersPanicOnTheCaller (issue 33, the panic guard): a
// panic in a case, which runs on one of Check's worker goroutines, killed
// the process with every goroutine's stack on the terminal, out of reach
// of the CLI's recover. Check now raises it again on its caller's
// goroutine as a *panicguard.Panic carrying the worker's stack, after
// every worker has stopped (and without a hang, whatever --jobs).
func TestCheckRaisesAWorkersPanicOnTheCaller(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		panictest.Raised(t, fmt.Sprintf("Check op=vector_add jobs=%d on a backend that panics", jobs), panictest.Value, "panictest.Backend.Run", func() {
			Check(context.Background(), Embedded(), panictest.Backend{}, CheckOptions{Op: "vector_add", Jobs: jobs, NoBudgets: true})
		})
	}
}
