package main

import (
	"strings"
	"testing"
)

func TestMutateUsage(t *testing.T) {
	o, _ := wantCLI(t, 0, []string{"vector_add/write-past-end", "vector_add/input-modified"}, "mutate", "--list")
	if n := strings.Count(strings.TrimSpace(o), "\n") + 1; n < 15 {
		t.Errorf("mutate --list: %d faults, want at least 15", n)
	}
	wantCLI(t, 2, []string{"mutate: --fault \"no/such\": not in the catalogue"}, "mutate", "--fault", "no/such")
	wantCLI(t, 2, []string{"mutate: unexpected argument"}, "mutate", "extra")
	wantCLI(t, 0, []string{"usage: npuverify mutate"}, "mutate", "-h")
}
