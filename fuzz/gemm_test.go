package fuzz_test

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

var fuzzAlphaBeta = [][2]string{{"1", "0"}, {"0.5", "0"}, {"-1.25", "1"}, {"3", "-0.5"}}

// FuzzGEMM: arbitrary bytes → mode, accumulate model, alpha/beta, small
// M×K×N, numerics and raw element bit patterns (Inf, NaN and subnormals
// included). Through the emulator backend, as any user runs it, the
// result must always be within bound and nothing may panic. (The kernel
// package's FuzzGEMMKernel also compares against its math/big model.)
func FuzzGEMM(f *testing.F) {
	f.Add([]byte{1, 0, 0, 3, 17, 5, 0, 0x3c, 0x00, 0xbc, 0x00, 0x7c, 0x00})
	f.Add([]byte{2, 1, 2, 1, 40, 1, 1, 0x7b, 0xff, 0x7b, 0xff, 0x7b, 0xff, 0xfb, 0xff})
	f.Add([]byte{4, 0, 3, 16, 33, 16, 0, 0x80, 0x7f, 0x01, 0xff, 0x3c, 0x00, 0x00, 0x80})
	f.Add([]byte{0, 1, 1, 2, 2, 2, 2, 0x7f, 0x80, 0x00, 0x00, 0xff, 0x80, 0x00, 0x01})
	f.Add([]byte{3, 0, 2, 5, 7, 3, 3, 0x7f, 0x7f, 0x00, 0x01, 0xc0, 0x00})
	op, err := ops.Lookup("gemm")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 7 {
			return
		}
		mode := ops.GEMMModes()[int(data[0])%len(ops.GEMMModes())]
		ab := fuzzAlphaBeta[int(data[2])%len(fuzzAlphaBeta)]
		p, err := op.Validate(ops.Params{"mode": mode.Name, "accumulate": []string{ops.GEMMSequential, ops.GEMMBlocked16}[data[1]%2],
			"alpha": ab[0], "beta": ab[1]})
		if err != nil {
			t.Fatal(err)
		}
		m, k, n := 1+int(data[3])%20, int(data[4])%70, 1+int(data[5])%20
		num := tensor.Numerics{Overflow: tensor.Overflow(data[6] & 1), Subnormals: tensor.Subnormals(data[6] >> 1 & 1)}
		body := data[7:]
		in := map[string]*tensor.Tensor{"a": fromBytes(mode.In, body, 0, m, k), "b": fromBytes(mode.In, body, 1, k, n)}
		if ab[1] != "0" {
			in["c"] = fromBytes(mode.Out, body, 2, m, n)
		}
		if mode.Int8() {
			in["scale_a"], in["scale_b"] = fromBytes(tensor.Float32, body, 3, m), fromBytes(tensor.Float32, body, 4, 1)
		}
		if err := ops.CheckInputs(op, p, in); err != nil {
			t.Fatalf("gemm %s: fuzz inputs break the contract: %v", p, err)
		}
		prof := npu.Ascend910B()
		prof.Numerics = num
		out, _, err := backend.NewEmulator(prof).Run(context.Background(), "gemm", p, in)
		if err != nil {
			t.Fatalf("gemm %s %s %dx%dx%d: %v", p, num, m, k, n, err)
		}
		want, err := op.Expect(p, in, num)
		if err != nil {
			t.Fatal(err)
		}
		s := verify.Subject{Op: "gemm", Params: p.String() + " " + num.String()}
		r, err := verify.Check(s, out, want, nil, []verify.Policy{verify.DefaultPolicy()})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Pass {
			t.Fatalf("%dx%dx%d\n%s", m, k, n, r.Failure())
		}
	})
}
