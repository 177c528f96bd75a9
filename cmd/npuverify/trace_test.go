package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestRunTraceWritesChromeTrace: run --trace writes a Chrome trace event
// file with a span per instruction on named core × pipe tracks; another
// backend than the emulator is a usage error.
func TestRunTraceWritesChromeTrace(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	for _, name := range []string{"x", "y"} {
		v := tensor.MustNew(tensor.Float16, n)
		for i := range n {
			v.SetFloat64(i, float64(i%7), tensor.Numerics{})
		}
		f, err := os.Create(filepath.Join(dir, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		if err := tensor.WriteNpy(f, v); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	trace := filepath.Join(dir, "trace.json")
	args := []string{"run", "vector_add", "--in", "x=" + filepath.Join(dir, "x.npy"), "--in", "y=" + filepath.Join(dir, "y.npy"), "--out", filepath.Join(dir, "o"), "--trace", trace}
	wantCLI(t, 0, []string{"wrote"}, args...)
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("run vector_add n=%d --trace: %v", n, err)
	}
	var tf struct {
		TraceEvents []struct {
			Name, Ph string
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatalf("run vector_add n=%d --trace: %v", n, err)
	}
	tracks, spans := map[string]bool{}, 0
	for _, e := range tf.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			tracks[e.Args["name"].(string)] = true
		case e.Ph == "X":
			spans++
		}
	}
	if spans == 0 || !tracks["MTE2"] || !tracks["V"] || !tracks["MTE3"] {
		t.Errorf("run vector_add n=%d --trace: got %d spans and tracks %v want spans on MTE2, V and MTE3", n, spans, tracks)
	}
	wantCLI(t, 2, []string{"--trace"}, append(args, "--backend", "exec:/bin/true")...)
}
