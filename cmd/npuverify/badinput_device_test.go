package main

import (
	"encoding/json"

	"github.com/npuverify/npuverify/npu"
)

// deviceBadInputs are device profiles that passed validation and then
// broke the emulator (issue 33): a 512-byte UB (sparse24_prune's tile of
// no groups appended tiles forever, ~200 MB/s), a 2^40 cube fractal (a
// divide by zero in gemm's tiling), and 4096 cores with 1 GiB memories
// (each core took its memories whole: 24 GB). Each is now refused when
// loaded, naming the field, before any case runs, within allocLimit.
func deviceBadInputs() []badInput {
	prof := func(edit func(*npu.Profile)) []byte {
		p := npu.Ascend910B()
		p.Name = "edited"
		edit(&p)
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		return b
	}
	files := func(b []byte) map[string][]byte { return map[string][]byte{"{dir}/prof.json": b} }
	ub512 := prof(func(p *npu.Profile) { p.UBBytes = 512 })
	frac := prof(func(p *npu.Profile) { p.CubeFP16.M = 1 << 40 })
	big := prof(func(p *npu.Profile) {
		p.AICores, p.VectorCores = npu.MaxProfileCores, npu.MaxProfileCores
		p.UBBytes, p.L1Bytes, p.L0ABytes, p.L0BBytes, p.L0CBytes = 1<<30, 1<<30, 1<<30, 1<<30, 1<<30
		p.CubeInt8.K = 1 << 20 // past the fractal limit: refused, not run
	})
	return []badInput{
		{name: "device/ub_bytes 512 (check)", files: files(ub512), args: []string{"check", "--op", "sparse24_prune", "--profile", "{dir}/prof.json"}, code: 2,
			want: []string{"ub_bytes: 512 cannot hold one tile of"}, maxAlloc: allocLimit},
		{name: "device/ub_bytes 512 (run)", files: files(ub512), args: []string{"run", "vector_add", "--in", "x={x}", "--in", "y={y}", "--out", "{out}", "--profile", "{dir}/prof.json"}, code: 2,
			want: []string{"ub_bytes: 512 cannot hold one tile of"}, maxAlloc: allocLimit},
		{name: "device/cube fractal 2^40", files: files(frac), args: []string{"check", "--op", "gemm", "--profile", "{dir}/prof.json"}, code: 2,
			want: []string{"cube_fractal_fp16.m: at most 128"}, maxAlloc: allocLimit},
		{name: "device/4096 cores, 1 GiB memories, 2^20 int8 fractal k", files: files(big), args: []string{"check", "--profile", "{dir}/prof.json"}, code: 2,
			want: []string{"cube_fractal_int8.k: at most 128"}, maxAlloc: allocLimit},
	}
}
