package kernels

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/verify"
)

// Profiles at their limits (issue 33): a profile that passes validation
// must run every op, and one that cannot must be refused by Validate
// with an error naming the field, never reach a kernel that loops on a
// tile of no elements, divides by zero or allocates its memories whole.

// smallCase is one small shape of one op.
type smallCase struct {
	op     string
	params ops.Params
	dims   map[string]int
	kernel KernelFunc
}

func (c smallCase) String() string { return fmt.Sprintf("%s %v dims=%v", c.op, c.params, c.dims) }

// smallCases covers every op and every input dtype, at shapes that run
// in milliseconds: sparse_compress's 40 tokens take its chunked path on
// a small UB.
func smallCases() []smallCase {
	var cs []smallCase
	for _, dt := range []string{"fp16", "bf16", "fp32"} {
		cs = append(cs, smallCase{"vector_add", ops.Params{"dtype": dt}, map[string]int{"n": 100}, VectorAddKernel})
	}
	cs = append(cs, smallCase{"sparse24_prune", ops.Params{}, map[string]int{"m": 4, "k": 8}, Sparse24PruneKernel})
	for _, m := range []string{"fp16_fp32acc", "int8_int32acc", "fp32"} {
		cs = append(cs, smallCase{"gemm", ops.Params{"mode": m}, map[string]int{"m": 5, "k": 7, "n": 3}, GEMMKernel})
	}
	for _, m := range []string{"fp16_fp32acc", "int8_int32acc"} {
		cs = append(cs, smallCase{"gemm24", ops.Params{"mode": m}, map[string]int{"m": 3, "k": 8, "n": 5}, GEMM24Kernel})
	}
	for _, dt := range []string{ops.KVFP16, ops.KVInt8} {
		cs = append(cs,
			smallCase{"kv_update", ops.Params{"cache_dtype": dt}, map[string]int{"b": 2, "s": 2, "h": 1, "d": 5, "l": 3}, KVUpdateKernel},
			smallCase{"decode_attention", ops.Params{"cache_dtype": dt}, map[string]int{"b": 2, "s": 2, "hq": 2, "h": 1, "d": 5, "l": 3}, DecodeAttentionKernel})
	}
	cs = append(cs, smallCase{"sparse_compress", ops.Params{}, map[string]int{"h": 2, "l": 40, "d": 5}, SparseCompressKernel})
	for _, pair := range [][2]string{{ops.FormatNCHW, ops.FormatNC1HWC0}, {ops.FormatND, ops.FormatFractalNZ}} {
		for _, dt := range []string{"fp16", "int8"} {
			p := ops.Params{"src_format": pair[0], "dst_format": pair[1], "dtype": dt}
			dims := map[string]int{"n": 2, "c": 17, "h": 2, "w": 3}
			if pair[0] == ops.FormatND {
				dims = map[string]int{"m": 17, "k": 33}
			}
			cs = append(cs, smallCase{"transdata", p, dims, TransDataKernel})
		}
	}
	return cs
}

// runSmall runs c on prof (seed 1, blocks serially, so that what it
// allocates does not depend on the host's cores) and judges the outputs
// by the op's bound and invariants; it returns the bytes allocated by the
// kernel alone.
func runSmall(t *testing.T, prof npu.Profile, c smallCase) uint64 {
	t.Helper()
	op, err := ops.Lookup(c.op)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	p, err := op.Validate(c.params)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	in, err := op.Generate(p, ops.Gen{Dims: c.dims, Dist: ops.DistUniform, Seed: 1})
	if err != nil {
		t.Fatalf("%s seed=1: generate: %v", c, err)
	}
	dev, err := npu.NewDevice(prof)
	if err != nil {
		t.Fatalf("%s seed=1: profile %s: %v", c, prof.Name, err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, _, err := c.kernel(npu.WithSerialLaunch(context.Background()), dev, p, in)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("%s seed=1: profile %s passed validation, but the kernel failed: %v", c, prof.Name, err)
	}
	want, err := op.Expect(p, in, prof.Numerics)
	if err != nil {
		t.Fatalf("%s seed=1: expect: %v", c, err)
	}
	for name, w := range want {
		if m := verify.Compute(got[name], w); m.FirstBad >= 0 {
			t.Errorf("%s seed=1: profile %s: output %s: element %d out of bound: got %v / want %v ± %v",
				c, prof.Name, name, m.FirstBad, got[name].Float64(m.FirstBad), w.Ref[m.FirstBad], w.Bound[m.FirstBad])
		}
	}
	if inv, ok := op.(ops.OutputInvariants); ok {
		for _, v := range inv.CheckOutputs(p, in, got, prof.Numerics) {
			t.Errorf("%s seed=1: profile %s: invariant %s: %s", c, prof.Name, v.Check, v.Reason)
		}
	}
	return after.TotalAlloc - before.TotalAlloc
}

// memFields are the local memories with their alignment's field.
var memFields = []struct {
	name string
	mem  func(*npu.Profile) *int
}{
	{"ub_bytes", func(p *npu.Profile) *int { return &p.UBBytes }},
	{"l1_bytes", func(p *npu.Profile) *int { return &p.L1Bytes }},
	{"l0a_bytes", func(p *npu.Profile) *int { return &p.L0ABytes }},
	{"l0b_bytes", func(p *npu.Profile) *int { return &p.L0BBytes }},
	{"l0c_bytes", func(p *npu.Profile) *int { return &p.L0CBytes }},
}

// minimalProfile is every field at the least ValidateFields admits (one
// core, unit fractals and alignments, the smallest UB block, the slowest
// clock and HBM, no latencies), then each memory raised, in multiples of
// 32 bytes, to the least that Validate admits: the smallest device the
// kernels' requirements allow.
func minimalProfile(t *testing.T) npu.Profile {
	t.Helper()
	p := npu.Profile{
		Name: "minimal", AICores: 1, VectorCores: 1, ClockGHz: 0.01,
		UBBytes: npu.MinUBBlockBytes, UBBlockBytes: npu.MinUBBlockBytes, L1Bytes: 1, L0ABytes: 1, L0BBytes: 1, L0CBytes: 1,
		CubeFP16: npu.Fractal{M: 1, K: 1, N: 1}, CubeInt8: npu.Fractal{M: 1, K: 1, N: 1},
		VectorBytesPerCycle: 1, HBMGBps: 1, Align: npu.Alignment{UB: 1, L1: 1, L0A: 1, L0B: 1, L0C: 1},
	}
	if err := p.ValidateFields(); err != nil {
		t.Fatalf("profile minimal: the least field values: %v", err)
	}
	for range 64 {
		err := p.Validate()
		if err == nil {
			return p
		}
		raised := false
		for _, f := range memFields {
			if strings.Contains(err.Error(), f.name) {
				// At least 32 bytes more, and at least what the error
				// says the op needs when it says so.
				next := *f.mem(&p) + 1
				var need int
				if i := strings.Index(err.Error(), "(needs "); i >= 0 {
					if _, e := fmt.Sscanf(err.Error()[i:], "(needs %d)", &need); e == nil {
						next = max(next, need)
					}
				}
				*f.mem(&p) = roundUp(next, 32)
				raised = true
				break
			}
		}
		if !raised {
			t.Fatalf("profile minimal: %v: the error names no memory", err)
		}
	}
	t.Fatalf("profile minimal: no memory sizes pass within 64 raises: %v", p.Validate())
	return p
}

// hugeProfile is every field at its upper limit: the most cores, the
// largest fractals, alignments, memories, vector width and latencies, the
// fastest clock and HBM validation admits.
func hugeProfile() npu.Profile {
	al := npu.MaxProfileAlign
	return npu.Profile{
		Name: "huge", AICores: npu.MaxProfileCores, VectorCores: npu.MaxProfileCores, ClockGHz: 999,
		UBBytes: npu.MaxProfileMemory, UBBlockBytes: al, L1Bytes: npu.MaxProfileMemory,
		L0ABytes: npu.MaxProfileMemory, L0BBytes: npu.MaxProfileMemory, L0CBytes: npu.MaxProfileMemory,
		CubeFP16:            npu.Fractal{M: npu.MaxProfileFractal, K: npu.MaxProfileFractal, N: npu.MaxProfileFractal},
		CubeInt8:            npu.Fractal{M: npu.MaxProfileFractal, K: npu.MaxProfileFractal, N: npu.MaxProfileFractal},
		VectorBytesPerCycle: npu.MaxProfileVector, HBMGBps: 1e9 - 1,
		Align:            npu.Alignment{UB: al, L1: al, L0A: al, L0B: al, L0C: al},
		DMALatencyCycles: npu.MaxProfileCycles, VectorIssueCycles: npu.MaxProfileCycles,
	}
}

// TestProfileTooSmallNamesField: ascend910b with a 512-byte UB (which
// made sparse24_prune's tile 0 groups, a loop that never advanced) is
// refused by Validate, naming ub_bytes and the op.
func TestProfileTooSmallNamesField(t *testing.T) {
	p := npu.Ascend910B()
	p.UBBytes = 512
	err := p.Validate()
	const want = "ub_bytes: 512 cannot hold one tile of"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("profile ascend910b ub_bytes=512: Validate: got %v / want an error containing %q", err, want)
	}
	huge := npu.Ascend910B()
	huge.CubeFP16.M = 1 << 40 // made gemm's tiling divide by zero
	if err := huge.Validate(); err == nil || !strings.Contains(err.Error(), "cube_fractal_fp16.m: at most") {
		t.Fatalf("profile ascend910b cube_fractal_fp16.m=2^40: Validate: got %v / want cube_fractal_fp16.m: at most %d", err, npu.MaxProfileFractal)
	}
}

// TestProfileExtremesRunEveryOp runs every smallCase on the least and the
// largest profiles validation admits. Each must pass its bound and
// invariants; on the huge profile (1 GiB memories, 4096 cores) a run may
// allocate at most what it allocates on ascend910b plus, per local memory
// (5), twice npu.LazyMemBytes: the store a memory larger than that starts
// with, and its one copy when a buffer outgrows it. A core that took its
// memories whole allocated 5 GiB a launch.
func TestProfileExtremesRunEveryOp(t *testing.T) {
	minimal := minimalProfile(t)
	huge := hugeProfile()
	if err := huge.Validate(); err != nil {
		t.Fatalf("profile huge: every field at its limit: %v", err)
	}
	for _, c := range smallCases() {
		t.Run(c.op, func(t *testing.T) {
			runSmall(t, minimal, c)
			base := runSmall(t, npu.Ascend910B(), c)
			got := runSmall(t, huge, c)
			if limit := base + 5*2*npu.LazyMemBytes; got > limit {
				t.Errorf("%s seed=1: profile huge: allocated %d bytes / want at most %d (ascend910b's %d + 5×2×%d)",
					c, got, limit, base, npu.LazyMemBytes)
			} else {
				t.Logf("%s: allocated %d bytes on profile huge, %d on ascend910b (limit %d)", c, got, base, limit)
			}
		})
	}
}
