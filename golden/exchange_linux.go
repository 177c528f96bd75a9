//go:build linux

package golden

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange atomically swaps the directories a and b with
// renameat2(RENAME_EXCHANGE). It reports false (and no error) when the
// kernel or file system does not support the exchange, so that the caller
// falls back to two renames.
func exchange(a, b string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return false, nil
	}
	return false, err
}
