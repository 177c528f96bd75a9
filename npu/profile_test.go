package npu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

func TestAscend910B(t *testing.T) {
	p := Ascend910B()
	if err := p.Validate(); err != nil {
		t.Fatalf("profile ascend910b: Validate: got %v want nil", err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"name", p.Name, "ascend910b"},
		{"ai_cores", p.AICores, 24},
		{"vector_cores", p.VectorCores, 48},
		{"clock_ghz", p.ClockGHz, 1.8},
		{"ub_bytes", p.UBBytes, 192 * 1024},
		{"ub_block_bytes", p.UBBlockBytes, 32},
		{"l1_bytes", p.L1Bytes, 512 * 1024},
		{"l0a_bytes", p.L0ABytes, 64 * 1024},
		{"l0b_bytes", p.L0BBytes, 64 * 1024},
		{"l0c_bytes", p.L0CBytes, 128 * 1024},
		{"cube_fractal_fp16", p.CubeFP16, Fractal{16, 16, 16}},
		{"cube_fractal_int8", p.CubeInt8, Fractal{16, 32, 16}},
		{"vector_bytes_per_cycle", p.VectorBytesPerCycle, 256},
		{"hbm_gbps", p.HBMGBps, 1600.0},
		{"align", p.Align, Alignment{UB: 32, L1: 32, L0A: 512, L0B: 512, L0C: 64}},
		{"numerics", p.Numerics, tensor.Numerics{}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("profile ascend910b: %s: got %v want %v", c.name, c.got, c.want)
		}
	}
	q, err := ProfileByName("ascend910b")
	if err != nil || !reflect.DeepEqual(q, p) {
		t.Errorf("ProfileByName(ascend910b): got %+v, %v want %+v", q, err, p)
	}
	if _, err := ProfileByName("ascend310"); err == nil || !strings.Contains(err.Error(), "ascend910b") {
		t.Errorf("ProfileByName(ascend310): got %v want an error listing ascend910b", err)
	}
}

func TestProfileJSONRoundTrip(t *testing.T) {
	for _, num := range []tensor.Numerics{
		{},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush, Int8Rounding: tensor.RoundHalfAway},
	} {
		p := Ascend910B()
		p.Numerics = num
		b, err := p.JSON()
		if err != nil {
			t.Fatalf("profile numerics=%v: JSON: %v", num, err)
		}
		q, err := ParseProfile(b)
		if err != nil {
			t.Fatalf("profile numerics=%v: ParseProfile(%s): got %v want nil", num, b, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("profile numerics=%v: round trip: got %+v want %+v", num, q, p)
		}
		path := filepath.Join(t.TempDir(), "p.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if q, err := LoadProfile(path); err != nil || !reflect.DeepEqual(p, q) {
			t.Errorf("profile numerics=%v: LoadProfile: got %+v, %v want %+v", num, q, err, p)
		}
	}
	if _, err := LoadProfile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Errorf("LoadProfile(missing): got nil error want an error")
	}
}

func TestParseProfileErrors(t *testing.T) {
	base, err := Ascend910B().JSON()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(base, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sub := func(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }
	for _, c := range []struct {
		name string
		json []byte
		want string // substring of the error
	}{
		{"unknown field", edit(func(m map[string]any) { m["ub_kib"] = 192 }), "ub_kib"},
		{"unknown nested field", edit(func(m map[string]any) { sub(m, "align")["l2"] = 32 }), "l2"},
		{"zero ub", edit(func(m map[string]any) { m["ub_bytes"] = 0 }), "ub_bytes"},
		{"missing ub", edit(func(m map[string]any) { delete(m, "ub_bytes") }), "ub_bytes"},
		{"negative cores", edit(func(m map[string]any) { m["vector_cores"] = -1 }), "vector_cores"},
		{"zero ai cores", edit(func(m map[string]any) { m["ai_cores"] = 0 }), "ai_cores"},
		{"zero clock", edit(func(m map[string]any) { m["clock_ghz"] = 0 }), "clock_ghz"},
		{"negative hbm", edit(func(m map[string]any) { m["hbm_gbps"] = -5 }), "hbm_gbps"},
		{"fractal", edit(func(m map[string]any) { sub(m, "cube_fractal_int8")["k"] = 0 }), "cube_fractal_int8.k"},
		{"align not pow2", edit(func(m map[string]any) { sub(m, "align")["l0a"] = 500 }), "align.l0a"},
		{"ub not block multiple", edit(func(m map[string]any) { m["ub_bytes"] = 1000 }), "ub_bytes"},
		{"negative latency", edit(func(m map[string]any) { m["dma_latency_cycles"] = -1 }), "dma_latency_cycles"},
		{"bad overflow", edit(func(m map[string]any) { sub(m, "numerics")["overflow"] = "wrap" }), "overflow"},
		{"bad subnormals", edit(func(m map[string]any) { sub(m, "numerics")["subnormals"] = "daz" }), "subnormal"},
		{"empty name", edit(func(m map[string]any) { m["name"] = "" }), "name"},
		{"wrong type", edit(func(m map[string]any) { m["ub_bytes"] = "192KiB" }), "ub_bytes"},
		{"trailing data", append(append([]byte{}, base...), []byte(" {}")...), "trailing"},
		{"not json", []byte("ub_bytes: 1"), "profile"},
	} {
		_, err := ParseProfile(c.json)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseProfile %s: got %v want an error naming %q", c.name, err, c.want)
		}
	}
	// Numerics may be omitted: the zero value is the IEEE default.
	b := edit(func(m map[string]any) { delete(m, "numerics") })
	if p, err := ParseProfile(b); err != nil || p.Numerics != (tensor.Numerics{}) {
		t.Errorf("ParseProfile without numerics: got %+v, %v want IEEE numerics and nil", p.Numerics, err)
	}
	if _, err := NewDevice(Profile{}); err == nil {
		t.Errorf("NewDevice(Profile{}): got nil error want an error")
	}
}
