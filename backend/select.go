package backend

import (
	"fmt"
	"strings"
	"time"

	"github.com/npuverify/npuverify/npu"
)

// Select returns the backend a spec names, the form the CLI's --backend
// and the suites' NPUVERIFY_BACKEND take: "emulator" (or "") for the
// emulator on prof, or "exec:CMD ARGS" for an external command (docs/exec-backend.md)
// with the given per-case timeout, told prof's numerics.
func Select(spec string, prof npu.Profile, timeout time.Duration) (Backend, error) {
	switch {
	case spec == "" || spec == "emulator":
		return NewEmulator(prof), nil
	case strings.HasPrefix(spec, "exec:"):
		return NewExec(strings.TrimPrefix(spec, "exec:"), ExecOptions{Timeout: timeout, Numerics: prof.Numerics})
	}
	return nil, fmt.Errorf("backend %q: want emulator or exec:'CMD ARGS'", spec)
}
