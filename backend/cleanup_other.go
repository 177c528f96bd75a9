//go:build !unix

package backend

import (
	"fmt"
	"os"

	"github.com/npuverify/npuverify/safefile"
)

// removeTree removes the case directory dir; what cannot be removed is an
// error naming it (see cleanup_unix.go for the walk unix systems get).
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("case directory %s could not be removed: %w", safefile.Quote(dir), err)
	}
	return nil
}
