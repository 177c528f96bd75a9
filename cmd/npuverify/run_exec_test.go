package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// A kernel behind exec has no cost model: run prints its measured kernel
// time and writes its samples to cost.json, and no emulator figure (no
// "0 cycles", no zero utilisation) appears anywhere.
func TestRunExecWritesKernelTimeOnly(t *testing.T) {
	dir := t.TempDir()
	const n = 17
	x, y := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, float64(i+1), tensor.Numerics{}) // y stays +0: z = x exactly
	}
	for name, tt := range map[string]*tensor.Tensor{"x": x, "y": y} {
		f, err := os.Create(filepath.Join(dir, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		if err := tensor.WriteNpy(f, tt); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	kernel := filepath.Join(dir, "kernel.sh")
	body := "#!/bin/sh\ncp \"$1/x.npy\" \"$1/out/z.npy\"\nprintf '{\"kernel_ns\": [300, 100, 200]}' > \"$1/out/timing.json\"\n"
	if err := os.WriteFile(kernel, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "o")
	stdout, _ := wantCLI(t, 0, []string{"wrote"}, "run", "vector_add", "--in", "x="+filepath.Join(dir, "x.npy"),
		"--in", "y="+filepath.Join(dir, "y.npy"), "--out", out, "--backend", "exec:"+kernel)
	if !strings.Contains(stdout, "kernel time: ") || !strings.Contains(stdout, "(median of 3)") || strings.Contains(stdout, "cycles") {
		t.Errorf("run vector_add dtype=fp16 n=%d through exec: stdout\n%s\nwant a kernel time, median of 3, and no cycles", n, stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cost map[string]any
	if err := json.Unmarshal(b, &cost); err != nil {
		t.Fatalf("cost.json: %v\n%s", err, b)
	}
	keys := make([]string, 0, len(cost))
	for k := range cost {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []any{300e-9, 100e-9, 200e-9}
	if !slices.Equal(keys, []string{"kernel_seconds", "seconds"}) || cost["seconds"] != 200e-9 || !slices.Equal(cost["kernel_seconds"].([]any), want) {
		t.Errorf("run vector_add dtype=fp16 n=%d through exec: cost.json = %s, want seconds 2e-07 and kernel_seconds %v only", n, b, want)
	}
}
