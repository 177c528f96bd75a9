package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/npuverify/npuverify/safefile"
)

// Bazel test sharding (docs/scale-out.md). Under `bazel test` with
// shard_count = N, Bazel starts N processes and tells each which one it is
// through the environment; check takes its shard from there when --shard
// is absent. TEST_SHARD_INDEX is 0-based, --shard I/N 1-based: index i is
// shard i+1 of N, the same split as --shard, so Bazel's shards and
// --shard's cover the cases identically.
const (
	envTotalShards = "TEST_TOTAL_SHARDS"
	envShardIndex  = "TEST_SHARD_INDEX"
	envShardStatus = "TEST_SHARD_STATUS_FILE"
)

// bazelShard returns the 1-based shard and the shard count that Bazel's
// environment (read through getenv) asks for, and the status file to
// touch (may be ""); ok is false when TEST_TOTAL_SHARDS is unset or
// empty. Malformed or inconsistent values are an error naming the
// variable: running every case, or the wrong shard, would silently run
// each case N times or never.
func bazelShard(getenv func(string) string) (shard, shards int, status string, ok bool, err error) {
	total := getenv(envTotalShards)
	if total == "" {
		return 0, 0, "", false, nil
	}
	n, err := strconv.Atoi(total)
	if err != nil || n < 1 {
		return 0, 0, "", true, fmt.Errorf("%s=%q: want a positive shard count", envTotalShards, total)
	}
	index := getenv(envShardIndex)
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= n {
		return 0, 0, "", true, fmt.Errorf("%s=%q: want a 0-based shard index below %s=%d", envShardIndex, index, envTotalShards, n)
	}
	return i + 1, n, getenv(envShardStatus), true, nil
}

// selectShard returns the shard a sharded command (check, explore) runs:
// --shard's value when given, else the one Bazel's environment asks for,
// announced on stderr because nothing on the command line says so, else
// shard 1 of 1 (shards 0: unsharded). status is Bazel's status file to
// touch once the command has validated everything ("" when none). Errors
// are usage errors of where.
func selectShard(flag, where string, stderr io.Writer) (shard, shards int, status string, err error) {
	if flag != "" {
		if shard, shards, err = parseShard(flag); err != nil {
			return 0, 0, "", usageErr(where, "%v", err)
		}
		return shard, shards, "", nil
	}
	shard, shards, status, ok, err := bazelShard(os.Getenv)
	if err != nil {
		return 0, 0, "", usageErr(where, "Bazel sharding: %v", err)
	}
	if ok {
		fmt.Fprintf(stderr, "npuverify: %s: shard %d/%d from %s=%s, %s=%s\n", where, shard, shards, envShardIndex, os.Getenv(envShardIndex), envTotalShards, os.Getenv(envTotalShards))
	}
	return shard, shards, status, nil
}

// touchStatusFile tells Bazel that this test honours its sharding: Bazel
// checks that the file exists (recent versions fail a sharded test that
// does not create it). The file is created if missing and its times set to
// now; it is opened without following a symlink and without blocking on a
// FIFO, and anything but a regular file is refused rather than written.
// An existing regular file that belongs to someone else (which we may not
// open, or whose times we may not set: EPERM, EACCES) already says what
// Bazel asks, and is left as it is.
func touchStatusFile(path string) error {
	// Read-only: a FIFO then opens at once (and is refused below) instead
	// of failing with ENXIO for want of a reader.
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s: is a symbolic link (not followed), not a regular file", safefile.Quote(path))
	}
	if errors.Is(err, fs.ErrPermission) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode().IsRegular() {
			return nil // there, not ours
		}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s)", safefile.Quote(path), fi.Mode().Type())
	}
	// UTIME_NOW needs only write access, where explicit times need
	// ownership; lacking both, the file is there, which is what counts.
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, now, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%s: setting its times: %w", safefile.Quote(path), err)
	}
	return nil
}
