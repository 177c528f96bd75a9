package metamorphic_test

import (
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/metamorphic"
)

// Every relation holds on the independent C kernel, served as a worker
// (one process for every run): relations hold for any legal
// implementation, not only for the emulator's summation order.
// backendtest's TestCKernel runs them through exec as well.
func TestCKernelHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C kernel: skipped under -short")
	}
	bin := ckernel.Build(t)
	e, err := backend.NewWorker("'"+strings.ReplaceAll(bin, "'", `'\''`)+"'", backend.WorkerOptions{ExecOptions: backend.ExecOptions{Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatalf("NewWorker(%q): %v", bin, err)
	}
	t.Cleanup(func() { e.Close() })
	ran := 0
	for _, op := range relationOps {
		for _, c := range metamorphic.Cases(op, 4) {
			if !ckernel.Supports(c) {
				continue
			}
			ran++
			for _, err := range metamorphic.Check(t.Context(), e, c) {
				t.Errorf("%v", err)
			}
		}
	}
	if ran == 0 {
		t.Fatalf("the C kernel supports no case of %v", relationOps)
	}
}
