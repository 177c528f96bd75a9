package kernels

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestGEMMNZMatchesND: for every mode and accumulate model of gemm and
// gemm24, on every layout of the operands (M, K, N off every fractal, two
// shapes: one output block, and several blocks over three cores), the
// kernel's NZ out is its ND out moved through the layout bit for bit,
// every padding element +0: consuming and producing NZ changes no
// summation order. The faults of the NZ path must fail it
// (nz-operand-read-as-nd, nz-last-fractal-row-dropped).
func TestGEMMNZMatchesND(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	shapes := [][3]int{{17, 40, 9}, {49, 72, 75}}
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			for si, s := range shapes {
				beta := []string{"0", "0.5"}[si%2]
				p := ops.Params{"mode": mode.Name, "accumulate": acc, "beta": beta}
				for _, lay := range [][3]string{{"FRACTAL_NZ", "ND", "ND"}, {"ND", "FRACTAL_NZ", "FRACTAL_NZ"}, {"FRACTAL_NZ", "FRACTAL_NZ", "FRACTAL_NZ"}} {
					q := p.Clone()
					q["format_a"], q["format_b"], q["format_out"] = lay[0], lay[1], lay[2]
					q["m"], q["k"], q["n"] = fmt.Sprint(s[0]), fmt.Sprint(s[1]), fmt.Sprint(s[2])
					checkNZMatchesND(t, dev, ops.GEMM, GEMMKernel, p, q, s, uint64(si+1), mode.Out, lay[2] == "FRACTAL_NZ")
				}
			}
		}
	}
	for _, mode := range []string{"fp16_fp32acc", "int8_int32acc"} {
		for si, s := range [][3]int{{17, 40, 9}, {49, 72, 75}} {
			p := ops.Params{"mode": mode}
			q := ops.Params{"mode": mode, "format_b": "FRACTAL_NZ", "format_out": "FRACTAL_NZ", "n": fmt.Sprint(s[2])}
			checkNZMatchesND(t, dev, ops.GEMM24, GEMM24Kernel, p, q, s, uint64(si+1), tensor.Float16, true)
		}
	}
}

// TestGEMMNZFaultsFail: each NZ fault of gemm's and gemm24's catalogues
// changes the NZ out of a case it names (M not a multiple of 16, NZ
// inputs).
func TestGEMMNZFaultsFail(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	q := ops.Params{"format_a": "FRACTAL_NZ", "format_b": "FRACTAL_NZ", "format_out": "FRACTAL_NZ", "m": "17", "k": "40", "n": "9"}
	vq, err := ops.GEMM.Validate(q)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 3
	in, err := ops.GEMM.Generate(vq, ops.Gen{Dims: map[string]int{"m": 17, "k": 40, "n": 9}, Dist: ops.DistUniform, Seed: seed})
	if err != nil {
		t.Fatalf("gemm %v seed=%d: Generate: %v", vq, seed, err)
	}
	good, _, err := GEMMKernel(context.Background(), dev, vq, in)
	if err != nil {
		t.Fatalf("gemm %v seed=%d: %v", vq, seed, err)
	}
	for _, fault := range []npu.Fault{FaultGEMMNZReadAsND, FaultGEMMNZLastRowDropped} {
		ctx := npu.WithFaults(context.Background(), npu.NewFaults(fault))
		got, _, err := GEMMKernel(ctx, dev, vq, in)
		if err != nil {
			continue // reported: the fault shows
		}
		same := true
		for i := range good["out"].Len() {
			same = same && got["out"].Bits(i) == good["out"].Bits(i)
		}
		if same {
			t.Errorf("gemm %v seed=%d: fault %s: out unchanged, want it to differ", vq, seed, fault)
		}
	}
	q24 := ops.Params{"format_b": "FRACTAL_NZ", "format_out": "FRACTAL_NZ", "n": "9"}
	in24, err := ops.GEMM24.Generate(q24, ops.Gen{Dims: map[string]int{"m": 17, "k": 40, "n": 9}, Dist: ops.DistUniform, Seed: seed})
	if err != nil {
		t.Fatalf("gemm24 %v seed=%d: Generate: %v", q24, seed, err)
	}
	good24, _, err := GEMM24Kernel(context.Background(), dev, q24, in24)
	if err != nil {
		t.Fatalf("gemm24 %v seed=%d: %v", q24, seed, err)
	}
	ctx := npu.WithFaults(context.Background(), npu.NewFaults(FaultGEMM24NZLastRowDropped))
	if got, _, err := GEMM24Kernel(ctx, dev, q24, in24); err == nil {
		same := true
		for i := range good24["out"].Len() {
			same = same && got["out"].Bits(i) == good24["out"].Bits(i)
		}
		if same {
			t.Errorf("gemm24 %v seed=%d: fault %s: out unchanged, want it to differ", q24, seed, FaultGEMM24NZLastRowDropped)
		}
	}
}

// checkNZMatchesND runs one case of TestGEMMNZMatchesND: p (ND) and q
// (the layout) on the same seed and dims s.
func checkNZMatchesND(t *testing.T, dev *npu.Device, op ops.Op, kernel func(context.Context, *npu.Device, ops.Params, map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error),
	p, q ops.Params, s [3]int, seed uint64, outD tensor.DType, outNZ bool) {
	t.Helper()
	dims := map[string]int{"m": s[0], "k": s[1], "n": s[2]}
	run := func(p ops.Params) *tensor.Tensor {
		vp, err := op.Validate(p)
		if err != nil {
			t.Fatalf("%s %v: Validate: %v", op.Name(), p, err)
		}
		in, err := op.Generate(vp, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: seed})
		if err != nil {
			t.Fatalf("%s %v dims=%v seed=%d: Generate: %v", op.Name(), vp, dims, seed, err)
		}
		ctx := context.Background()
		if seed == 2 { // the second shape: 16×16 output blocks on three cores
			ctx = WithVariant(ctx, Variant{Name: "tiling", Op: "gemm", Options: GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 3}})
			if op == ops.GEMM24 {
				ctx = WithVariant(ctx, Variant{Name: "tiling", Op: "gemm24", Options: GEMM24Options{BaseM: 16, BaseN: 16, BlockDim: 3}})
			}
		}
		out, _, err := kernel(ctx, dev, vp, in)
		if err != nil {
			t.Fatalf("%s %v dims=%v seed=%d: kernel: %v", op.Name(), vp, dims, seed, err)
		}
		return out["out"]
	}
	nd, nz := run(p), run(q)
	m, n := s[0], s[2]
	if !outNZ {
		for i := range m * n {
			if nd.Bits(i) != nz.Bits(i) {
				t.Fatalf("%s %v dims=%v seed=%d: out element %d: got bits %#x, want %#x (the ND case's)", op.Name(), q, dims, seed, i, nz.Bits(i), nd.Bits(i))
			}
		}
		return
	}
	want := ops.GEMMNZShape(m, n, outD)
	if !nz.SameShape(want) {
		t.Fatalf("%s %v dims=%v seed=%d: out shape %v, want %v", op.Name(), q, dims, seed, nz.Shape, want)
	}
	c0, m1 := want[3], want[1]
	seen := make([]bool, nz.Len())
	for r := range m {
		for c := range n {
			i := nzOffset(r, c, m1, c0)
			seen[i] = true
			if nz.Bits(i) != nd.Bits(r*n+c) {
				t.Fatalf("%s %v dims=%v seed=%d: out (%d,%d) at NZ %d: got bits %#x, want %#x (the ND case's)", op.Name(), q, dims, seed, r, c, i, nz.Bits(i), nd.Bits(r*n+c))
			}
		}
	}
	for i, real := range seen {
		if !real && nz.Bits(i) != 0 {
			t.Fatalf("%s %v dims=%v seed=%d: NZ padding element %d: got bits %#x, want +0", op.Name(), q, dims, seed, i, nz.Bits(i))
		}
	}
}
