package golden

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestAddKeepsOtherCases holds Add to its difference from Update: cases it
// is not given stay, a new store gets its marker, a case given again is
// replaced only when it changed, and the result is a valid store.
func TestAddKeepsOtherCases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "findings") // missing: Add creates it
	ctx := context.Background()
	var out bytes.Buffer
	first := smallCases(0, "fp16_uniform_n15", "fp32_uniform_n17")
	ch, err := Add(ctx, dir, newEmulator(), first, &out)
	if err != nil {
		t.Fatalf("first add: %v", err)
	}
	if len(ch.Added) != 2 {
		t.Fatalf("first add: %s, want 2 added\n%s", ch, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerName)); err != nil {
		t.Fatalf("first add: no store marker: %v", err)
	}
	second := smallCases(0, "int8_uniform_n1", "fp32_uniform_n17")
	second[1].Seed++
	ch, err = Add(ctx, dir, newEmulator(), second, &out)
	if err != nil {
		t.Fatalf("second add: %v", err)
	}
	want := Changes{Added: []string{"vector_add/int8_uniform_n1"}, Changed: []string{"vector_add/fp32_uniform_n17"}}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("second add: changes %+v, want %+v", ch, want)
	}
	s, err := openT(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range Verify(s) {
		t.Error(err)
	}
	wantIDs := []string{"vector_add/fp16_uniform_n15", "vector_add/fp32_uniform_n17", "vector_add/int8_uniform_n1"}
	if ids := caseIDs(s); !slices.Equal(ids, wantIDs) {
		t.Errorf("cases after two adds: %v, want %v", ids, wantIDs)
	}
}

// TestAddRefusesFailingBackend: like Update, Add records nothing a
// recorder fails.
func TestAddRefusesFailingBackend(t *testing.T) {
	dir := t.TempDir()
	if _, err := Add(context.Background(), dir, offByOne{newEmulator()}, smallCases(0, "fp16_uniform_n17"), &bytes.Buffer{}); err == nil {
		t.Fatal("Add recorded a case its recorder fails")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed add wrote %d entries", len(entries))
	}
}
