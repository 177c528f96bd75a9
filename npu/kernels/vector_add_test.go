package kernels

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/internal/testgen"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

var (
	bg     = context.Background()
	dtypes = []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8}
)

func device(t testing.TB, num tensor.Numerics) *npu.Device {
	t.Helper()
	p := npu.Ascend910B()
	p.Numerics = num
	d, err := npu.NewDevice(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// prefix returns a tensor holding the first n elements of t.
func prefix(t *tensor.Tensor, n int) *tensor.Tensor {
	p := tensor.MustNew(t.DType, n)
	for i := range n {
		p.SetBits(i, t.Bits(i))
	}
	return p
}

// maxTile is the largest tile whose 2×3 buffers fit the default UB.
func maxTile(dt tensor.DType) int { return (192 << 10) / 6 / dt.Size() }

// edgeSizes are the sizes every dtype is checked at: small edges around
// the 32-byte block, one UB tile −1/0/+1, one full pass of every core
// over one full tile −1/0/+1.
func edgeSizes(dt tensor.DType) []int {
	s := []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257}
	for _, base := range []int{maxTile(dt), 48 * maxTile(dt)} {
		s = append(s, base-1, base, base+1)
	}
	return s
}

func TestVectorAddBitExact(t *testing.T) {
	profiles := []tensor.Numerics{
		{},
		{Overflow: tensor.OverflowSaturate},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
	}
	for di, dt := range dtypes {
		sizes := edgeSizes(dt)
		seed := uint64(1000 + di)
		r := testgen.Rand(seed)
		big := sizes[len(sizes)-1]
		xAll := testgen.Values(r, dt, big, true)
		yAll := testgen.Values(r, dt, big, true)
		for _, num := range profiles {
			dev := device(t, num)
			for _, n := range sizes {
				x, y := prefix(xAll, n), prefix(yAll, n)
				where := fmt.Sprintf("vector_add dtype=%s n=%d numerics={%v} seed=%d", dt, n, num, seed)
				z, cost, err := VectorAdd(bg, dev, x, y, VectorAddOptions{})
				if err != nil {
					t.Fatalf("%s: got error %v want nil", where, err)
				}
				if msg := testgen.Check(z, n, func(i int) float64 { return num.Round(x.Float64(i)+y.Float64(i), dt) }); msg != "" {
					t.Errorf("%s: %s", where, msg)
				}
				if got, want := cost.GMBytesIn+cost.GMBytesOut, int64(3*n*dt.Size()); got != want || cost.GMBytesIn != 2*cost.GMBytesOut {
					t.Errorf("%s: GM bytes: got in %d out %d want %d in total, 2:1", where, cost.GMBytesIn, cost.GMBytesOut, want)
				}
			}
		}
	}
}

// TestVectorAddTilingsAgree checks that the result does not depend on the
// core count or tile size, and that the GM traffic is exactly 3·N·size
// whatever the tiling.
func TestVectorAddTilingsAgree(t *testing.T) {
	dev := device(t, tensor.Numerics{})
	for di, dt := range dtypes {
		for _, n := range []int{1, 17, 333, 4097, 100003} {
			seed := uint64(2000 + 10*di)
			r := testgen.Rand(seed)
			x, y := testgen.Values(r, dt, n, true), testgen.Values(r, dt, n, true)
			ref, _, err := VectorAdd(bg, dev, x, y, VectorAddOptions{})
			if err != nil {
				t.Fatalf("vector_add dtype=%s n=%d seed=%d: got error %v want nil", dt, n, seed, err)
			}
			block := 32 / dt.Size()
			for _, cores := range []int{0, 1, 2, 7, 48} {
				for _, tile := range []int{0, 16, block} {
					opt := VectorAddOptions{BlockDim: cores, TileElems: tile}
					where := fmt.Sprintf("vector_add dtype=%s n=%d opt=%+v seed=%d", dt, n, opt, seed)
					z, cost, err := VectorAdd(bg, dev, x, y, opt)
					if err != nil {
						t.Fatalf("%s: got error %v want nil", where, err)
					}
					if ok, i := tensor.BitsEqual(z, ref); !ok {
						t.Errorf("%s: element %d: got %#x want %#x (default tiling)", where, i, z.Bits(i), ref.Bits(i))
					}
					if got, want := cost.GMBytesIn+cost.GMBytesOut, int64(3*n*dt.Size()); got != want {
						t.Errorf("%s: GM bytes: got %d want %d", where, got, want)
					}
					if cores > 0 && cost.BlockDim != cores {
						t.Errorf("%s: got blockDim %d want %d", where, cost.BlockDim, cores)
					}
				}
			}
		}
	}
}

// TestVectorAddLoadBalance checks the modeled balance once N gives every
// core at least one block.
func TestVectorAddLoadBalance(t *testing.T) {
	dev := device(t, tensor.Numerics{})
	seed := uint64(3000)
	r := testgen.Rand(seed)
	for _, dt := range dtypes {
		b := 32 / dt.Size()
		sizes := []int{48 * b, 48*b + 1, 49*b - 1, 49 * b, 97*b + 5, 1000*b + 3, 48*maxTile(dt) + 1, 96*maxTile(dt) + b + 1}
		for range 4 {
			sizes = append(sizes, 48*b+r.IntN(3<<20/dt.Size()))
		}
		for _, n := range sizes {
			x, y := tensor.MustNew(dt, n), tensor.MustNew(dt, n)
			_, cost, err := VectorAdd(bg, dev, x, y, VectorAddOptions{})
			if err != nil {
				t.Fatalf("vector_add dtype=%s n=%d seed=%d: %v", dt, n, seed, err)
			}
			if cost.BlockDim != 48 || cost.LoadBalance < 0.9 {
				t.Errorf("vector_add dtype=%s n=%d seed=%d: got blockDim %d load balance %.4f (cycles %v) want 48, ≥ 0.9",
					dt, n, seed, cost.BlockDim, cost.LoadBalance, cost.CoreCycles)
			}
			if cost.UBPeakBytes > 192<<10 || cost.Overlap < 0 || cost.Overlap > 1 || cost.VectorUtil <= 0 || cost.VectorUtil > 1 {
				t.Errorf("vector_add dtype=%s n=%d: got ub peak %d overlap %v vector util %v want ≤ UB, in [0,1], in (0,1]",
					dt, n, cost.UBPeakBytes, cost.Overlap, cost.VectorUtil)
			}
		}
	}
}

// TestVectorAddTiling checks the tiling's invariants on sizes up to
// tensor.MaxElements without running it.
func TestVectorAddTiling(t *testing.T) {
	prof := npu.Ascend910B()
	seed := uint64(4000)
	r := testgen.Rand(seed)
	for _, dt := range dtypes {
		b := 32 / dt.Size()
		sizes := []int{0, 1, b - 1, b, b + 1, 47 * b, 48*b - 1, 48 * b, 48*b + 1, tensor.MaxElements - 1, tensor.MaxElements}
		for range 50 {
			sizes = append(sizes, r.IntN(tensor.MaxElements+1))
		}
		for _, n := range sizes {
			for _, opt := range []VectorAddOptions{{}, {BlockDim: 7}, {BlockDim: 48, TileElems: 16}, {TileElems: b}} {
				where := fmt.Sprintf("vector_add tiling dtype=%s n=%d opt=%+v seed=%d", dt, n, opt, seed)
				tl, err := VectorAddTilingWith(prof, n, dt, opt)
				if err != nil {
					t.Fatalf("%s: got error %v want nil", where, err)
				}
				if msg := checkTiling(prof, tl, opt); msg != "" {
					t.Errorf("%s: %s (tiling %+v)", where, msg, tl)
				}
			}
		}
	}
	for _, c := range []struct {
		n   int
		dt  tensor.DType
		opt VectorAddOptions
	}{
		{tensor.MaxElements + 1, tensor.Float16, VectorAddOptions{}},
		{-1, tensor.Float16, VectorAddOptions{}},
		{10, tensor.Int32, VectorAddOptions{}},
		{10, tensor.Float16, VectorAddOptions{BlockDim: 49}},
		{10, tensor.Float16, VectorAddOptions{BlockDim: -1}},
		{10, tensor.Float16, VectorAddOptions{TileElems: -1}},
		{10, tensor.Float16, VectorAddOptions{TileElems: maxTile(tensor.Float16) + 1}},
		{10, tensor.Float32, VectorAddOptions{TileElems: 1 << 40}},
	} {
		if _, err := VectorAddTilingWith(prof, c.n, c.dt, c.opt); err == nil {
			t.Errorf("vector_add tiling dtype=%s n=%d opt=%+v: got nil error want an error", c.dt, c.n, c.opt)
		}
	}
	if tl, err := VectorAddTilingWith(prof, maxTile(tensor.Float16), tensor.Float16, VectorAddOptions{TileElems: maxTile(tensor.Float16)}); err != nil || tl.TileElems != maxTile(tensor.Float16) {
		t.Errorf("vector_add tiling with the largest tile: got %+v, %v want TileElems %d", tl, err, maxTile(tensor.Float16))
	}
}

func checkTiling(prof npu.Profile, tl VectorAddTiling, opt VectorAddOptions) string {
	size := tl.DType.Size()
	if tl.N == 0 {
		if tl.BlockDim != 0 {
			return "N=0 launches cores"
		}
		return ""
	}
	blocks := (tl.N + tl.BlockElems - 1) / tl.BlockElems
	wantDim := min(48, blocks)
	if opt.BlockDim > 0 {
		wantDim = opt.BlockDim
	}
	if tl.BlockDim != wantDim {
		return fmt.Sprintf("blockDim %d, want %d", tl.BlockDim, wantDim)
	}
	if 6*roundUp(tl.TileElems*size, 32) > prof.UBBytes || tl.TileElems <= 0 {
		return "2×3 tiles do not fit UB"
	}
	next, maxN, minN := 0, 0, tl.N
	tiles := map[int]bool{}
	for i := range tl.BlockDim {
		off, n := tl.CoreRange(i)
		if off != next {
			return fmt.Sprintf("core %d starts at %d, want %d", i, off, next)
		}
		if n > 0 && (off*size)%32 != 0 {
			return fmt.Sprintf("core %d starts at unaligned element %d", i, off)
		}
		if n > tl.PerCore {
			return fmt.Sprintf("core %d has %d > PerCore elements", i, n)
		}
		next += n
		maxN = max(maxN, n)
		if i < tl.BlockDim-1 {
			minN = min(minN, n)
		}
		if n > 0 {
			tiles[(n+tl.TileElems-1)/tl.TileElems] = true
		}
	}
	if next != tl.N {
		return fmt.Sprintf("shares cover %d elements, want %d", next, tl.N)
	}
	if tl.BlockDim > 1 && maxN-minN > tl.BlockElems {
		return fmt.Sprintf("shares differ by %d elements, more than a block", maxN-minN)
	}
	if opt == (VectorAddOptions{}) && blocks >= 48 && len(tiles) != 1 {
		return fmt.Sprintf("cores have different tile counts %v", tiles)
	}
	if tl.TileNum != (tl.PerCore+tl.TileElems-1)/tl.TileElems {
		return "TileNum inconsistent"
	}
	return ""
}

func TestVectorAddEmpty(t *testing.T) {
	dev := device(t, tensor.Numerics{})
	for _, dt := range dtypes {
		for _, shape := range [][]int{{0}, {3, 0}} {
			x, y := tensor.MustNew(dt, shape...), tensor.MustNew(dt, shape...)
			z, cost, err := VectorAdd(bg, dev, x, y, VectorAddOptions{})
			if err != nil || z.Len() != 0 || !z.SameShape(shape) {
				t.Fatalf("vector_add dtype=%s shape=%v: got %v, %v want an empty tensor of that shape", dt, shape, z, err)
			}
			if !reflect.DeepEqual(cost, dev.ZeroCost()) {
				t.Errorf("vector_add dtype=%s shape=%v: got cost %+v want %+v", dt, shape, cost, dev.ZeroCost())
			}
		}
	}
}

func TestVectorAddShapes(t *testing.T) {
	dev := device(t, tensor.Numerics{})
	x, y := tensor.MustNew(tensor.Float32, 3, 5), tensor.MustNew(tensor.Float32, 3, 5)
	for i := range 15 {
		x.SetFloat64(i, float64(i), tensor.Numerics{})
		y.SetFloat64(i, 0.25, tensor.Numerics{})
	}
	z, _, err := VectorAdd(bg, dev, x, y, VectorAddOptions{})
	if err != nil || !z.SameShape([]int{3, 5}) || z.Float64(14) != 14.25 {
		t.Errorf("vector_add dtype=fp32 shape=[3 5]: got %v, %v want shape [3 5] and z[14]=14.25", z, err)
	}
}

func TestVectorAddErrors(t *testing.T) {
	dev := device(t, tensor.Numerics{})
	f16 := tensor.MustNew(tensor.Float16, 8)
	for _, c := range []struct {
		name string
		dev  *npu.Device
		x, y *tensor.Tensor
		opt  VectorAddOptions
		want string
	}{
		{"dtype mismatch", dev, f16, tensor.MustNew(tensor.BFloat16, 8), VectorAddOptions{}, "dtype mismatch"},
		{"shape mismatch", dev, f16, tensor.MustNew(tensor.Float16, 9), VectorAddOptions{}, "shape mismatch"},
		{"rank mismatch", dev, f16, tensor.MustNew(tensor.Float16, 2, 4), VectorAddOptions{}, "shape mismatch"},
		{"int32", dev, tensor.MustNew(tensor.Int32, 8), tensor.MustNew(tensor.Int32, 8), VectorAddOptions{}, "int32"},
		{"nil x", dev, nil, f16, VectorAddOptions{}, "nil"},
		{"nil device", nil, f16, f16, VectorAddOptions{}, "nil device"},
		{"too many cores", dev, f16, f16, VectorAddOptions{BlockDim: 49}, "BlockDim"},
		{"tile too big", dev, f16, f16, VectorAddOptions{TileElems: 1 << 20}, "exceed UB"},
	} {
		z, cost, err := VectorAdd(bg, c.dev, c.x, c.y, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || z != nil || cost != nil {
			t.Errorf("vector_add %s: got %v, %v, %v want an error containing %q", c.name, z, cost, err, c.want)
		}
	}
}

// TestVectorAddKernel: the KernelFunc entry checks its params and inputs.
func TestVectorAddKernel(t *testing.T) {
	fn := VectorAddKernel
	dev := device(t, tensor.Numerics{})
	x := tensor.MustNew(tensor.Float16, 20)
	x.SetFloat64(19, 1.5, tensor.Numerics{})
	for _, c := range []struct {
		name string
		p    ops.Params
		in   map[string]*tensor.Tensor
		want string // "" for success
	}{
		{"ok", ops.Params{"dtype": "fp16"}, map[string]*tensor.Tensor{"x": x, "y": x}, ""},
		{"missing dtype", ops.Params{}, map[string]*tensor.Tensor{"x": x, "y": x}, "dtype"},
		{"bad dtype", ops.Params{"dtype": "fp8"}, map[string]*tensor.Tensor{"x": x, "y": x}, "fp8"},
		{"dtype differs from param", ops.Params{"dtype": "bf16"}, map[string]*tensor.Tensor{"x": x, "y": x}, `input "x"`},
		{"missing y", ops.Params{"dtype": "fp16"}, map[string]*tensor.Tensor{"x": x}, `"y" is missing`},
		{"unknown input", ops.Params{"dtype": "fp16"}, map[string]*tensor.Tensor{"x": x, "y": x, "w": x}, `"w"`},
	} {
		out, cost, err := fn(bg, dev, c.p, c.in)
		if c.want == "" {
			if err != nil || out["z"] == nil || out["z"].Float64(19) != 3 || cost == nil || len(out) != 1 {
				t.Errorf("vector_add %s params=%v: got %v, %v, %v want z with z[19]=3", c.name, c.p, out, cost, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("vector_add %s params=%v: got %v want an error containing %q", c.name, c.p, err, c.want)
		}
	}
}

// BenchmarkVectorAdd adds two 1M-element fp16 vectors on the default
// profile and reports emulated elements per second.
func BenchmarkVectorAdd(b *testing.B) {
	const n = 1 << 20
	dev := device(b, tensor.Numerics{})
	r := testgen.Rand(1)
	x, y := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		y.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
	}
	b.SetBytes(3 * n * 2)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := VectorAdd(bg, dev, x, y, VectorAddOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "elem/s")
}
