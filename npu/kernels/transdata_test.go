package kernels_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// transDataSeed seeds the random shapes of the transdata tests.
const transDataSeed = 20261205

var transDataDTypes = []string{"fp16", "bf16", "fp32", "int8"}

// transDataPairs are the legal conversions.
var transDataPairs = [][2]string{
	{ops.FormatNCHW, ops.FormatNC1HWC0}, {ops.FormatNHWC, ops.FormatNC1HWC0},
	{ops.FormatNC1HWC0, ops.FormatNCHW}, {ops.FormatNC1HWC0, ops.FormatNHWC},
	{ops.FormatND, ops.FormatFractalNZ}, {ops.FormatFractalNZ, ops.FormatND},
}

func transDataDevice(t testing.TB) *npu.Device {
	t.Helper()
	d, err := npu.NewDevice(npu.Ascend910B())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// transDataCase draws one conversion: params, dims and a generated x.
func transDataCase(rng *rand.Rand, pair [2]string, dtype string, seed uint64) (ops.Params, map[string]int, *tensor.Tensor, error) {
	d, _ := tensor.ParseDType(dtype)
	c0 := ops.TransDataC0(d)
	edge := func() int { return []int{1, c0 - 1, c0, c0 + 1, 2*c0 + 3, rng.IntN(70)}[rng.IntN(6)] }
	p := ops.Params{"src_format": pair[0], "dst_format": pair[1], "dtype": dtype}
	var dims map[string]int
	if pair[0] == ops.FormatND || pair[0] == ops.FormatFractalNZ {
		dims = map[string]int{"m": []int{1, 15, 16, 17, 33, rng.IntN(80)}[rng.IntN(6)], "k": edge()}
		if rng.IntN(2) == 0 {
			dims["b"] = 1 + rng.IntN(3)
		}
		if pair[0] == ops.FormatFractalNZ {
			p["m"], p["k"] = strconv.Itoa(dims["m"]), strconv.Itoa(dims["k"])
		}
	} else {
		dims = map[string]int{"n": 1 + rng.IntN(3), "c": edge(), "h": 1 + rng.IntN(5), "w": 1 + rng.IntN(6)}
		if pair[0] == ops.FormatNC1HWC0 {
			p["c"] = strconv.Itoa(dims["c"])
		}
	}
	vp, err := ops.TransData.Validate(p)
	if err != nil {
		return nil, nil, nil, err
	}
	dist := []string{ops.DistUniform, ops.DistSpecial}[rng.IntN(2)]
	in, err := ops.TransData.Generate(vp, ops.Gen{Dims: dims, Dist: dist, Seed: seed})
	if err != nil {
		return nil, nil, nil, err
	}
	return vp, dims, in["x"], nil
}

// transDataWant is y built from the reference index map: bits of x, +0
// padding.
func transDataWant(p ops.Params, x *tensor.Tensor) *tensor.Tensor {
	d, _ := tensor.ParseDType(p["dtype"])
	c0 := ops.TransDataC0(d)
	s := x.Shape
	var idx []int
	var shape []int
	atoi := func(k string) int { n, _ := strconv.Atoi(p[k]); return n }
	switch p["src_format"] {
	case ops.FormatNCHW:
		idx = reference.NCHWToNC1HWC0(s[0], s[1], s[2], s[3], c0, false)
		shape = []int{s[0], (s[1] + c0 - 1) / c0, s[2], s[3], c0}
	case ops.FormatNHWC:
		idx = reference.NCHWToNC1HWC0(s[0], s[3], s[1], s[2], c0, true)
		shape = []int{s[0], (s[3] + c0 - 1) / c0, s[1], s[2], c0}
	case ops.FormatNC1HWC0:
		c := atoi("c")
		nhwc := p["dst_format"] == ops.FormatNHWC
		idx = reference.NC1HWC0ToNCHW(s[0], c, s[2], s[3], c0, nhwc)
		shape = []int{s[0], c, s[2], s[3]}
		if nhwc {
			shape = []int{s[0], s[2], s[3], c}
		}
	case ops.FormatND:
		r := len(s)
		b, _ := tensor.NumElements(s[:r-2])
		idx = reference.NDToNZ(b, s[r-2], s[r-1], c0)
		shape = append(slices.Clone(s[:r-2]), (s[r-1]+c0-1)/c0, (s[r-2]+15)/16, 16, c0)
	case ops.FormatFractalNZ:
		r := len(s)
		b, _ := tensor.NumElements(s[:r-4])
		idx = reference.NZToND(b, atoi("m"), atoi("k"), c0)
		shape = append(slices.Clone(s[:r-4]), atoi("m"), atoi("k"))
	}
	y := tensor.MustNew(d, shape...)
	for i, j := range idx {
		if j >= 0 {
			y.SetBits(i, x.Bits(j))
		}
	}
	return y
}

// sameBits reports the first element where got and want differ in shape
// or bits ("" when equal).
func sameBits(got, want *tensor.Tensor) string {
	if !slices.Equal(got.Shape, want.Shape) || got.DType != want.DType {
		return fmt.Sprintf("got %s%v / want %s%v", got.DType, got.Shape, want.DType, want.Shape)
	}
	for i := range want.Len() {
		if got.Bits(i) != want.Bits(i) {
			return fmt.Sprintf("element %d: got bits %#x / want %#x (exact)", i, got.Bits(i), want.Bits(i))
		}
	}
	return ""
}

// runTransData runs the kernel under ctx.
func runTransData(ctx context.Context, dev *npu.Device, p ops.Params, x *tensor.Tensor) (*tensor.Tensor, error) {
	out, _, err := kernels.TransDataKernel(ctx, dev, p, map[string]*tensor.Tensor{"x": x})
	if err != nil {
		return nil, err
	}
	return out["y"], nil
}

// The kernel moves every element bit for bit (NaN payloads, −0) and pads
// with +0, on random pairs, dtypes, channel and fractal edges and tilings,
// against the reference index map.
func TestTransDataKernelBitExact(t *testing.T) {
	dev := transDataDevice(t)
	rng := rand.New(rand.NewPCG(transDataSeed, 1))
	for i := range 120 {
		pair := transDataPairs[rng.IntN(len(transDataPairs))]
		dtype := transDataDTypes[rng.IntN(len(transDataDTypes))]
		seed := rng.Uint64()
		p, dims, x, err := transDataCase(rng, pair, dtype, seed)
		if err != nil {
			t.Fatalf("transdata %v dims %v seed %d: %v", p, dims, seed, err)
		}
		ctx := context.Background()
		if i%2 == 1 {
			ctx = kernels.WithVariant(ctx, kernels.Variant{Name: "t", Op: "transdata", Options: kernels.TransDataOptions{
				BlockDim: 1 + rng.IntN(7), TileRows: 16 * (1 + rng.IntN(3)), Interleave: rng.IntN(2) == 0}})
		}
		y, err := runTransData(ctx, dev, p, x)
		if err != nil {
			t.Fatalf("transdata %v dims %v seed %d: kernel: %v", p, dims, seed, err)
		}
		if msg := sameBits(y, transDataWant(p, x)); msg != "" {
			t.Fatalf("transdata %v dims %v seed %d: %s", p, dims, seed, msg)
		}
	}
}

// transDataProps are the gopter parameters, seeded.
func transDataProps() *gopter.TestParameters {
	p := gopter.DefaultTestParametersWithSeed(transDataSeed)
	p.MinSuccessfulTests = 40
	return p
}

// Round trips through the kernel are the identity: NCHW → NC1HWC0 →
// NCHW, NHWC likewise, ND → FRACTAL_NZ → ND, for every dtype.
func TestTransDataRoundTripProperties(t *testing.T) {
	dev := transDataDevice(t)
	there := map[string][2]string{
		ops.FormatNCHW: {ops.FormatNCHW, ops.FormatNC1HWC0},
		ops.FormatNHWC: {ops.FormatNHWC, ops.FormatNC1HWC0},
		ops.FormatND:   {ops.FormatND, ops.FormatFractalNZ},
	}
	for _, plain := range []string{ops.FormatNCHW, ops.FormatNHWC, ops.FormatND} {
		props := gopter.NewProperties(transDataProps())
		props.Property(plain+" → fractal → "+plain+" is the identity", prop.ForAll(
			func(di int, seed uint64) string {
				rng := rand.New(rand.NewPCG(seed, 2))
				dtype := transDataDTypes[di]
				p, dims, x, err := transDataCase(rng, there[plain], dtype, seed)
				if err != nil {
					return fmt.Sprintf("transdata %v seed %d: %v", p, seed, err)
				}
				mid, err := runTransData(context.Background(), dev, p, x)
				if err != nil {
					return fmt.Sprintf("transdata %v dims %v seed %d: forward: %v", p, dims, seed, err)
				}
				back := ops.Params{"src_format": there[plain][1], "dst_format": plain, "dtype": dtype}
				if plain == ops.FormatND {
					back["m"], back["k"] = strconv.Itoa(dims["m"]), strconv.Itoa(dims["k"])
				} else {
					back["c"] = strconv.Itoa(dims["c"])
				}
				y, err := runTransData(context.Background(), dev, back, mid)
				if err != nil {
					return fmt.Sprintf("transdata %v dims %v seed %d: back: %v", back, dims, seed, err)
				}
				if msg := sameBits(y, x); msg != "" {
					return fmt.Sprintf("transdata round trip %v dims %v seed %d: %s", p, dims, seed, msg)
				}
				return ""
			},
			gen.IntRange(0, len(transDataDTypes)-1), gen.UInt64(),
		))
		props.TestingRun(t)
	}
}

// Every fault of the catalogue changes the result (or fails the launch,
// or, a synchronisation fault, raises a sanitizer finding) on at least
// one golden case, and each valid variant changes no bit on any of them.
func TestTransDataFaultsCaughtVariantsNot(t *testing.T) {
	dev := transDataDevice(t)
	type run struct {
		p ops.Params
		x *tensor.Tensor
	}
	var cases []run
	for _, c := range opdb.TransData.GoldenCases() {
		vp, err := ops.TransData.Validate(c.Params)
		if err != nil {
			t.Fatalf("transdata %s %v: %v", c.Name, c.Params, err)
		}
		in, err := ops.TransData.Generate(vp, ops.Gen{Dims: c.Dims, Dist: c.Dist, Seed: c.Seed})
		if err != nil {
			t.Fatalf("transdata %s %v seed %d: %v", c.Name, vp, c.Seed, err)
		}
		cases = append(cases, run{vp, in["x"]})
	}
	for _, fi := range kernels.TransDataFaults {
		ctx := npu.WithFaults(context.Background(), npu.NewFaults(fi.Fault))
		caught := false
		for _, r := range cases {
			// A synchronisation fault keeps the bits; the sanitizer's
			// finding shows it.
			out, cost, err := kernels.TransDataKernel(ctx, dev, r.p, map[string]*tensor.Tensor{"x": r.x})
			if err != nil || sameBits(out["y"], transDataWant(r.p, r.x)) != "" || len(cost.Findings) > 0 {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("transdata fault %s: no golden case shows it: got every output equal and no sanitizer finding / want one differing or a finding", fi.Fault)
		}
	}
	for _, v := range opdb.TransData.Variants {
		ctx := kernels.WithVariant(context.Background(), v)
		for _, r := range cases {
			y, err := runTransData(ctx, dev, r.p, r.x)
			if err != nil {
				t.Fatalf("transdata variant %s %v: %v", v, r.p, err)
			}
			if msg := sameBits(y, transDataWant(r.p, r.x)); msg != "" {
				t.Errorf("transdata variant %s %v: %s", v, r.p, msg)
			}
		}
	}
}
