package main

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenUpdateKeepsUserCases is issue 33 item 8: golden update --dir
// on a store holding a case of the user's (gemm/tiny is not in the
// default set) keeps it and says so; --dry-run --prune names it as the one
// that would go and changes nothing.
func TestGoldenUpdateKeepsUserCases(t *testing.T) {
	store := gemmStore(t)
	user := filepath.Join(store, "gemm", "tiny")
	mine := treeDigest(t, user)
	wantCLI(t, 0, []string{"kept     gemm/tiny (not in the generated set; --prune removes it)", ", 1 kept"}, "golden", "update", "--dir", store)
	if got := treeDigest(t, user); !maps.Equal(got, mine) {
		t.Fatalf("golden update --dir %s changed the user's case gemm/tiny:\nbefore %v\nafter  %v", store, mine, got)
	}
	whole := treeDigest(t, store)
	o, _ := wantCLI(t, 0, []string{"would be removed  gemm/tiny", "dry run, nothing written", "1 removed, 0 changed"}, "golden", "update", "--dir", store, "--dry-run", "--prune")
	if got := treeDigest(t, store); !maps.Equal(got, whole) {
		t.Errorf("golden update --dry-run --prune changed the store:\nbefore %v\nafter  %v", whole, got)
	}
	if want := "rebuild"; strings.Contains(o, want) {
		t.Errorf("a dry run says to %s:\n%s", want, o)
	}
}
