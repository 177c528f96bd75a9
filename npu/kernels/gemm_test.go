package kernels

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// gemmModel evaluates the gemm contract's evaluation model directly, one
// element at a time, with math/big for the exact sums: the independent
// oracle the emulator must match bit for bit.
func gemmModel(cfg ops.GEMMConfig, in map[string]*tensor.Tensor, num tensor.Numerics) *tensor.Tensor {
	m, k, n, err := ops.GEMMDims(in)
	if err != nil {
		panic(err)
	}
	a, b := in["a"].Float64s(), in["b"].Float64s()
	mode := cfg.Mode
	out := tensor.MustNew(mode.Out, m, n)
	acc, _ := mode.Acc.FloatFormat()
	ep, _ := mode.Epilogue.FloatFormat()
	rnE := func(x float64) float64 { // x exact in float64 or an innocuous double rounding
		if mode.Epilogue == tensor.Float32 {
			return float64(float32(x))
		}
		return ep.RoundNearestEven(x)
	}
	alpha, beta := rnE(cfg.Alpha), rnE(cfg.Beta)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var v float64
			if mode.Int8() {
				var s int64
				for kk := 0; kk < k; kk++ {
					s += int64(a[i*k+kk]) * int64(b[kk*n+j])
				}
				v = float64(float32(s))
				sa, sb := in["scale_a"].Float64s(), in["scale_b"].Float64s()
				si, sj := sa[0], sb[0]
				if len(sa) > 1 {
					si = sa[i]
				}
				if len(sb) > 1 {
					sj = sb[j]
				}
				v = float64(float32(float64(float32(si*sj)) * v))
			} else {
				step := 1
				if cfg.Accumulate == ops.GEMMBlocked16 {
					step = ops.GEMMBlockK
				}
				for k0 := 0; k0 < k; k0 += step {
					terms := []float64{v}
					for kk := k0; kk < min(k0+step, k); kk++ {
						terms = append(terms, a[i*k+kk]*b[kk*n+j])
					}
					v = exactRound(acc, terms)
				}
			}
			if cfg.Alpha != 1 {
				v = rnE(alpha * v)
			}
			if cfg.Beta != 0 {
				v = rnE(v + rnE(beta*in["c"].Float64(i*n+j)))
			}
			out.SetFloat64(i*n+j, v, num)
		}
	}
	return out
}

// exactRound returns RN_f(Σ terms) with one rounding; non-finite terms
// follow IEEE (any order gives the same class).
func exactRound(f tensor.Format, terms []float64) float64 {
	s := new(big.Float).SetPrec(2400)
	var plain float64
	special := false
	for _, t := range terms {
		plain += t
		if math.IsInf(t, 0) || math.IsNaN(t) {
			special = true
			continue
		}
		s.Add(s, new(big.Float).SetFloat64(t))
	}
	if special {
		return plain
	}
	if s.Sign() == 0 {
		// An exact zero sum is +0 in round-to-nearest, unless every term is −0.
		allNeg := true
		for _, t := range terms {
			allNeg = allNeg && t == 0 && math.Signbit(t)
		}
		if allNeg {
			return math.Copysign(0, -1)
		}
		return 0
	}
	exp := s.MantExp(nil)
	p := f.P
	if lead := exp - 1; lead < f.Emin {
		p = f.P - (f.Emin - lead)
	}
	if p <= 0 {
		r := 0.0
		if new(big.Float).Abs(s).Cmp(big.NewFloat(f.MinSubnormal()/2)) > 0 {
			r = f.MinSubnormal()
		}
		if s.Signbit() {
			r = -r
		}
		return r
	}
	r, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(p)).Set(s).Float64()
	if math.Abs(r) > f.MaxFinite() {
		return math.Copysign(math.Inf(1), r)
	}
	return r
}

// sameBits is tensor.BitsEqual except that any two NaNs match: IEEE
// leaves a NaN's sign and payload to the implementation.
func sameBits(a, b *tensor.Tensor) (bool, int) {
	if a.DType != b.DType || !a.SameShape(b.Shape) {
		return false, -1
	}
	for i := 0; i < a.Len(); i++ {
		if x, y := a.Float64(i), b.Float64(i); math.IsNaN(x) && math.IsNaN(y) {
			continue
		}
		if a.Bits(i) != b.Bits(i) {
			return false, i
		}
	}
	return true, 0
}

func genGEMM(t testing.TB, p ops.Params, dist string, m, k, n int, seed uint64) (ops.Params, ops.GEMMConfig, map[string]*tensor.Tensor) {
	t.Helper()
	op := ops.GEMM
	vp, err := op.Validate(p)
	if err != nil {
		t.Fatalf("gemm %v: %v", p, err)
	}
	in, err := op.Generate(vp, ops.Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: dist, Seed: seed})
	if err != nil {
		t.Fatalf("gemm %v dist=%s %dx%dx%d seed=%d: %v", vp, dist, m, k, n, seed, err)
	}
	cfg, _ := ops.ParseGEMM(vp)
	return vp, cfg, in
}

var testDev = npu.MustNewDevice(npu.Ascend910B())

// The emulator follows the evaluation model bit for bit and its results
// are within the op's bound, over modes, accumulate models, alpha/beta,
// distributions and the shapes around the fractals.
func TestGEMMEmulatorMatchesModel(t *testing.T) {
	op := ops.GEMM
	shapes := [][3]int{{1, 1, 1}, {1, 40, 1}, {17, 1, 5}, {15, 16, 17}, {16, 33, 16}, {31, 32, 33}, {13, 67, 7}}
	abs := []ops.Params{{"alpha": "1", "beta": "0"}, {"alpha": "-0.7", "beta": "1.5"}}
	seed := uint64(0)
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			for _, ab := range abs {
				for _, dist := range op.Dists() {
					for _, sh := range shapes {
						seed++
						p := ab.Clone()
						p["mode"], p["accumulate"] = mode.Name, acc
						vp, cfg, in := genGEMM(t, p, dist, sh[0], sh[1], sh[2], seed)
						got, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
						prefix := fmt.Sprintf("gemm %v dist=%s %dx%dx%d seed=%d", vp, dist, sh[0], sh[1], sh[2], seed)
						if err != nil {
							t.Fatalf("%s: %v", prefix, err)
						}
						want := gemmModel(cfg, in, tensor.Numerics{})
						if ok, i := sameBits(got, want); !ok {
							t.Errorf("%s: element %d differs from the model: got %g / want %g (bits %#x vs %#x)", prefix, i, got.Float64(i), want.Float64(i), got.Bits(i), want.Bits(i))
						}
						e, err := op.Expect(vp, in, tensor.Numerics{})
						if err != nil {
							t.Fatalf("%s: Expect: %v", prefix, err)
						}
						for i := 0; i < got.Len(); i++ {
							if !e["out"].Accepts(i, got.Float64(i)) {
								t.Errorf("%s: element %d outside the bound: got %g / want %g (alt %v) / bound %g", prefix, i, got.Float64(i), e["out"].Ref[i], e["out"].Alt[i], e["out"].Bound[i])
								break
							}
						}
					}
				}
			}
		}
	}
}

// For a fixed accumulate model the output is bit-identical whatever the
// tiling and the core count.
func TestGEMMTilingInvariance(t *testing.T) {
	opts := []GEMMOptions{
		{},
		{BlockDim: 1},
		{BlockDim: 5},
		{BaseM: 16, BaseN: 16, BaseK: 32, StepK: 1},
		{BaseM: 32, BaseN: 48, BaseK: 64, StepK: 2, BlockDim: 3},
		{BaseM: 64, BaseN: 128, BaseK: 64, StepK: 1, BlockDim: 2},
	}
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			for _, dist := range []string{ops.DistNormal, ops.DistSpecial} {
				vp, cfg, in := genGEMM(t, ops.Params{"mode": mode.Name, "accumulate": acc, "alpha": "0.5", "beta": "1"}, dist, 37, 300, 45, 9)
				var first *tensor.Tensor
				for _, o := range opts {
					if mode.Int8() && o.BaseK%32 != 0 && o.BaseK != 0 {
						continue
					}
					got, cost, err := GEMM(context.Background(), testDev, cfg, in, o)
					if err != nil {
						t.Fatalf("gemm %v dist=%s seed=9 options %+v: %v", vp, dist, o, err)
					}
					if first == nil {
						first = got
						continue
					}
					if ok, i := tensor.BitsEqual(got, first); !ok {
						t.Errorf("gemm %v dist=%s seed=9 options %+v (block_dim %d): element %d differs from the default tiling: got %g / want %g", vp, dist, o, cost.BlockDim, i, got.Float64(i), first.Float64(i))
					}
				}
			}
		}
	}
}

// The cost counters: cube MACs of the padded operands, GM bytes including
// the panels re-read for every output block, and a balanced split.
func TestGEMMCost(t *testing.T) {
	for _, tt := range []struct {
		mode    string
		m, k, n int
		o       GEMMOptions
	}{
		{"fp16_fp32acc", 256, 512, 512, GEMMOptions{}},
		{"fp16_fp32acc", 100, 70, 90, GEMMOptions{BaseM: 32, BaseN: 32}},
		{"int8_int32acc", 64, 100, 64, GEMMOptions{}},
		{"fp16_fp32acc", 4096, 16, 16, GEMMOptions{}},
	} {
		vp, cfg, in := genGEMM(t, ops.Params{"mode": tt.mode}, ops.DistNormal, tt.m, tt.k, tt.n, 1)
		_, cost, err := GEMM(context.Background(), testDev, cfg, in, tt.o)
		if err != nil {
			t.Fatal(err)
		}
		tl, _ := GEMMTilingWith(testDev.Profile(), cfg, tt.m, tt.k, tt.n, tt.o)
		size := int64(cfg.Mode.In.Size())
		var wantIn, wantMACs int64
		for core := range tl.BlockDim {
			for _, blk := range tl.coreBlocks(core) {
				mr, nr := blk.mr, blk.nr
				wantIn += int64(mr*tt.k+tt.k*nr) * size
				if cfg.Mode.Int8() {
					wantIn += int64(mr+nr) * 4
				}
				kp := 0
				for k0 := 0; k0 < tt.k; k0 += tl.depth() {
					kp += roundUp(min(tl.depth(), tt.k-k0), tl.Frac.K)
				}
				wantMACs += int64(roundUp(mr, tl.Frac.M) * kp * roundUp(nr, tl.Frac.N))
			}
		}
		var macs, useful int64
		for _, c := range cost.Cores {
			macs += c.CubeMACs
			useful += c.CubeUsefulMACs
		}
		prefix := fmt.Sprintf("gemm %v %dx%dx%d seed=1 tiling %+v", vp, tt.m, tt.k, tt.n, tl)
		if cost.GMBytesIn != wantIn || macs != wantMACs || useful != int64(tt.m*tt.k*tt.n) {
			t.Errorf("%s: got gm_bytes_in %d, cube MACs %d, useful %d / want %d, %d, %d", prefix, cost.GMBytesIn, macs, useful, wantIn, wantMACs, tt.m*tt.k*tt.n)
		}
		if want := int64(tt.m * tt.n * cfg.Mode.Out.Size()); cost.GMBytesOut != want {
			t.Errorf("%s: got gm_bytes_out %d / want %d", prefix, cost.GMBytesOut, want)
		}
		if cost.CubeUtil <= 0 || cost.CubeUtil > 1 || cost.LoadBalance <= 0 {
			t.Errorf("%s: got cube_util %.3f load_balance %.3f / want in (0, 1]", prefix, cost.CubeUtil, cost.LoadBalance)
		}
		t.Logf("%s: block_dim %d cycles %d gm_in %d cube_util %.3f balance %.3f overlap %.3f", prefix, cost.BlockDim, cost.Cycles, cost.GMBytesIn, cost.CubeUtil, cost.LoadBalance, cost.Overlap)
	}
}

func TestGEMMEmptyAndErrors(t *testing.T) {
	op := ops.GEMM
	for _, sh := range [][3]int{{0, 4, 4}, {4, 0, 4}, {4, 4, 0}} {
		vp, cfg, in := genGEMM(t, ops.Params{"beta": "1"}, ops.DistNormal, sh[0], sh[1], sh[2], 2)
		got, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
		if err != nil {
			t.Fatalf("gemm %v %v: %v", vp, sh, err)
		}
		if ok, i := sameBits(got, gemmModel(cfg, in, tensor.Numerics{})); !ok {
			t.Errorf("gemm %v %v seed=2: element %d differs from the model", vp, sh, i)
		}
	}
	fn := GEMMKernel
	p, _ := op.Validate(ops.Params{"beta": "1"})
	_, _, in := genGEMM(t, ops.Params{}, ops.DistNormal, 2, 3, 4, 3)
	if _, _, err := fn(context.Background(), testDev, p, in); err == nil {
		t.Errorf("gemm %v: run without c: got nil error / want input error", p)
	}
	for _, o := range []GEMMOptions{{BaseM: 8}, {BaseK: 24}, {BaseM: 256, BaseN: 256}, {BlockDim: 100}} {
		_, cfg, in := genGEMM(t, ops.Params{}, ops.DistNormal, 20, 20, 20, 3)
		if _, _, err := GEMM(context.Background(), testDev, cfg, in, o); err == nil {
			t.Errorf("gemm options %+v: got nil error / want a tiling error", o)
		}
	}
}

// Shapes from the issue: tall-skinny, long K, primes, vectors; all modes.
func TestGEMMShapes(t *testing.T) {
	shapes := [][3]int{{4096, 16, 16}, {3, 4096, 5}, {1, 4096, 1}, {97, 89, 83}, {64, 1024, 48}}
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			for si, sh := range shapes {
				seed := uint64(40 + si)
				vp, cfg, in := genGEMM(t, ops.Params{"mode": mode.Name, "accumulate": acc, "alpha": "0.5", "beta": "2"}, ops.DistNormal, sh[0], sh[1], sh[2], seed)
				prefix := fmt.Sprintf("gemm %v dist=normal %dx%dx%d seed=%d", vp, sh[0], sh[1], sh[2], seed)
				got, cost, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
				if err != nil {
					t.Fatalf("%s: %v", prefix, err)
				}
				if msg := checkExpect(prefix, vp, in, got, tensor.Numerics{}); msg != "" {
					t.Error(msg)
				}
				if sh[0]*sh[1]*sh[2] <= 1<<16 {
					if ok, i := sameBits(got, gemmModel(cfg, in, tensor.Numerics{})); !ok {
						t.Errorf("%s: element %d differs from the model", prefix, i)
					}
				}
				if sh == [3]int{4096, 16, 16} && cost.LoadBalance < 0.7 {
					t.Errorf("%s: got load_balance %.3f / want ≥ 0.7 (block_dim %d)", prefix, cost.LoadBalance, cost.BlockDim)
				}
			}
		}
	}
}

// The store follows the device's numerics profile (saturate, flush), and
// the op's bound under that profile accepts the result.
func TestGEMMNumericsProfile(t *testing.T) {
	prof := npu.Ascend910B()
	prof.Name = "ascend910b-sat-flush"
	prof.Numerics = tensor.Numerics{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}
	dev := npu.MustNewDevice(prof)
	for _, mode := range ops.GEMMModes() {
		for di, dist := range []string{ops.DistLarge, ops.DistSpecial, ops.DistNormal} {
			seed := uint64(60 + di)
			vp, cfg, in := genGEMM(t, ops.Params{"mode": mode.Name, "beta": "1"}, dist, 9, 40, 7, seed)
			prefix := fmt.Sprintf("gemm %v dist=%s 9x40x7 seed=%d profile=%s", vp, dist, seed, prof.Numerics)
			got, _, err := GEMM(context.Background(), dev, cfg, in, GEMMOptions{})
			if err != nil {
				t.Fatalf("%s: %v", prefix, err)
			}
			if ok, i := sameBits(got, gemmModel(cfg, in, prof.Numerics)); !ok {
				t.Errorf("%s: element %d differs from the model: got %g / want %g", prefix, i, got.Float64(i), gemmModel(cfg, in, prof.Numerics).Float64(i))
			}
			if msg := checkExpect(prefix, vp, in, got, prof.Numerics); msg != "" {
				t.Error(msg)
			}
		}
	}
}

// The KernelFunc entry takes the op's params and inputs and returns "out".
func TestGEMMKernelFunc(t *testing.T) {
	fn := GEMMKernel
	vp, _, in := genGEMM(t, ops.Params{"mode": "int8_int32acc", "beta": "0.5"}, ops.DistNormal, 5, 64, 3, 8)
	out, cost, err := fn(context.Background(), testDev, vp, in)
	if err != nil {
		t.Fatalf("gemm %v seed=8: %v", vp, err)
	}
	o := out["out"]
	if len(out) != 1 || o == nil || o.DType != tensor.Float16 || !o.SameShape([]int{5, 3}) || cost == nil || cost.Cycles <= 0 {
		t.Fatalf("gemm %v seed=8: got outputs %v cost %v / want out fp16[5 3] and a cost", vp, out, cost)
	}
	in["scale_a"] = tensor.MustNew(tensor.Float32, 4)
	if _, _, err := fn(context.Background(), testDev, vp, in); err == nil {
		t.Errorf("gemm %v: scale_a of 4 values for M=5: got nil error / want an input error", vp)
	}
}

// Tightness max(|got − ref| / bound) of the emulator's default-model
// results per mode on the default distributions (logged for the report;
// asserted ≤ 1, which the bound tests already imply).
func TestGEMMTightness(t *testing.T) {
	op := ops.GEMM
	for _, mode := range ops.GEMMModes() {
		var parts []string
		for di, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistCancel} {
			for _, k := range []int{64, 1024} {
				seed := uint64(70 + di)
				vp, cfg, in := genGEMM(t, ops.Params{"mode": mode.Name}, dist, 32, k, 32, seed)
				got, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
				if err != nil {
					t.Fatal(err)
				}
				e, _ := op.Expect(vp, in, tensor.Numerics{})
				w := e["out"]
				var tight float64
				for i := 0; i < got.Len(); i++ {
					g := got.Float64(i)
					if !w.Accepts(i, g) {
						t.Errorf("gemm %v dist=%s 32x%dx32 seed=%d: element %d: got %g / want %g / bound %g", vp, dist, k, seed, i, g, w.Ref[i], w.Bound[i])
					}
					if !math.IsNaN(g) && !math.IsInf(g, 0) && w.Bound[i] > 0 {
						tight = math.Max(tight, math.Abs(g-w.Ref[i])/w.Bound[i])
					}
				}
				parts = append(parts, fmt.Sprintf("%s/K=%d %.3f", dist, k, tight))
			}
		}
		t.Logf("gemm mode=%s emulator tightness: %v", mode.Name, parts)
	}
}
