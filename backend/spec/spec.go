// Package spec turns a backend spec, the string the CLI's --backend and
// the suites' NPUVERIFY_BACKEND take, into a Backend. It is the one place
// that knows every implementation, so that the core (package backend and
// below) links none of them.
package spec

import (
	"fmt"
	"strings"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/npu"
)

// Open returns the backend spec s names: "emulator" (or "") for the
// emulator on prof, or "exec:CMD ARGS" for an external command
// (docs/exec-backend.md) with the given per-case timeout, told prof's
// numerics.
func Open(s string, prof npu.Profile, timeout time.Duration) (backend.Backend, error) {
	switch {
	case s == "" || s == "emulator":
		return emulator.New(prof), nil
	case strings.HasPrefix(s, "exec:"):
		return backend.NewExec(strings.TrimPrefix(s, "exec:"), backend.ExecOptions{Timeout: timeout, Numerics: prof.Numerics})
	}
	return nil, fmt.Errorf("backend %q: want emulator or exec:'CMD ARGS'", s)
}
