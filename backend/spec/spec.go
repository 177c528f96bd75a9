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
// emulator on prof, "exec:CMD ARGS" for an external command run once per
// case, or "worker:CMD ARGS" for one kept running per job slot and handed
// case after case (docs/exec-backend.md), either with the given per-case
// timeout and told prof's numerics. The caller closes an exec or worker
// backend (io.Closer) when done with it: a worker keeps running until
// then.
func Open(s string, prof npu.Profile, timeout time.Duration) (backend.Backend, error) {
	return OpenIn(s, prof, timeout, "")
}

// OpenIn is Open with an exec or worker command run in dir ("" = the
// caller's working directory), so that its relative paths resolve
// against dir: the suites pass the directory the user ran go test from,
// which is not the one go test runs them in.
func OpenIn(s string, prof npu.Profile, timeout time.Duration, dir string) (backend.Backend, error) {
	opt := backend.ExecOptions{Timeout: timeout, Numerics: prof.Numerics, Dir: dir}
	switch {
	case s == "" || s == "emulator":
		return emulator.New(prof), nil
	case strings.HasPrefix(s, "exec:"):
		return backend.NewExec(strings.TrimPrefix(s, "exec:"), opt)
	case strings.HasPrefix(s, "worker:"):
		return backend.NewWorker(strings.TrimPrefix(s, "worker:"), backend.WorkerOptions{ExecOptions: opt})
	}
	return nil, fmt.Errorf("backend %q: want emulator, exec:'CMD ARGS' or worker:'CMD ARGS'", s)
}
