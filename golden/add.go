package golden

import (
	"context"
	"io"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/ops"
)

// Add records cases into the store in dir with backend b (the emulator, the
// store's recorder), as Update does, but without removing any case it is
// not given: npuverify explore adds the failures it found to a store that
// may already hold earlier ones (its example database), and a second
// explorer writing there must not lose the first one's cases. A case with
// the ID of an existing case replaces it; other cases are left alone.
//
// The guarantees are Update's: every case is generated and judged in
// memory first (a case the recorder itself fails is an error and nothing
// is written), dir must be a store or missing or empty (then it becomes
// one, marker first), the store's exclusive lock is held throughout, and
// each case directory is replaced atomically ("Crash guarantee" in
// update.go). What was added or changed is printed to w.
func Add(ctx context.Context, dir string, b backend.Backend, cases []ops.Case, w io.Writer) (Changes, error) {
	return record(ctx, dir, b, cases, w, "golden add", UpdateOptions{}, false)
}
