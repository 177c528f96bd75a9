package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/golden"
)

// TestBazelEmptyShardTouchesStatus is issue 33 item 11: a Bazel shard past
// the last case passes (exit 0, Bazel may start more shards than there are
// tests) and still touches the shard status file Bazel asked for, which
// Bazel checks to know the test honours sharding.
func TestBazelEmptyShardTouchesStatus(t *testing.T) {
	store := t.TempDir()
	copyCase(t, filepath.Join("..", "..", "golden", "cases"), store, vectorCase)
	storeMarkerFile(t, store)
	status := filepath.Join(t.TempDir(), "status")
	t.Setenv(envTotalShards, "3")
	t.Setenv(envShardIndex, "2")
	t.Setenv(envShardStatus, status)
	wantCLI(t, 0, []string{"shard 3/3 (from TEST_TOTAL_SHARDS) selects none of the 1 cases"}, "check", "--golden", store)
	if fi, err := os.Stat(status); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("check under TEST_TOTAL_SHARDS=3 TEST_SHARD_INDEX=2 with an empty shard: status file %s: %v, want a regular file", status, err)
	}
}

// storeMarkerFile marks dir as a golden store, as golden update would.
func storeMarkerFile(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, golden.MarkerName), []byte(storeMarker), 0o644); err != nil {
		t.Fatal(err)
	}
}
