package explore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/npuverify/npuverify/internal/panicguard/panictest"
)

// TestRunRaisesAJobsPanicOnTheCaller (issue 33, the panic guard): explore
// judges its cases on job goroutines; a panic there killed the process
// with every goroutine's stack, out of reach of the CLI's recover. Run
// raises it again on its caller's goroutine once every job and the
// generator have stopped, whatever the number of jobs, without a hang.
func TestRunRaisesAJobsPanicOnTheCaller(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		opt := Options{Ops: []string{"vector_add"}, Seed: 1, Jobs: jobs, Budget: 30 * time.Second, Device: testDevice()}
		panictest.Raised(t, fmt.Sprintf("explore.Run op=vector_add seed=1 jobs=%d on a backend that panics", jobs), panictest.Value, "panictest.Backend.Run", func() {
			Run(context.Background(), panictest.Backend{}, opt)
		})
	}
}
