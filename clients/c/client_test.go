// Package cclient_test tests the C client of the exec and worker
// protocols (npuverify.h): the header compiles with warnings as errors as
// C11, C17 and C++11; its fp16 and bf16 conversions against Go's; and its
// example vector_add driver against the emulator under every numerics
// profile (the golden cases hold no subnormal-flushing case).
// cmd/npuverify's TestCClientVectorAdd puts the example under `npuverify
// check` on the golden cases. Every test skips when no C compiler is
// found (internal/ckernel).
package cclient_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestHeaderStrict compiles the header's declarations and implementation
// with -Wall -Wextra -Werror -pedantic as C11 and C17, and as C++11 when
// a C++ compiler is found: a driver may build it with any of them.
func TestHeaderStrict(t *testing.T) {
	cc := ckernel.CC(t)
	header := filepath.Join(ckernel.ClientDir(t), "npuverify.h")
	type build struct{ compiler, lang, std string }
	builds := []build{{cc, "c", "c11"}, {cc, "c", "c17"}}
	for _, cxx := range []string{os.Getenv("CXX"), "c++", "g++", "clang++"} {
		if p, err := exec.LookPath(cxx); cxx != "" && err == nil {
			builds = append(builds, build{p, "c++", "c++11"})
			break
		}
	}
	for _, b := range builds {
		for _, impl := range []bool{false, true} {
			args := []string{"-std=" + b.std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-x", b.lang}
			if impl {
				args = append(args, "-DNPUVERIFY_IMPLEMENTATION")
			}
			out, err := exec.Command(b.compiler, append(args, header)...).CombinedOutput()
			if err != nil {
				t.Errorf("%s %s %s: %v\n%s", b.compiler, strings.Join(args, " "), header, err, out)
			}
		}
	}
}

// TestConversions holds nv_f32_to_f16, nv_f32_to_bf16 and nv_f16_to_f32
// to Go's conversions (x448/float16, tensor.BF16FromFloat32), bit for bit
// (a NaN to a quiet NaN of the same sign): every fp16 value widened; and
// rounded, every float32 on and one ulp either side of each fp16 value and
// of each midpoint between neighbours, both signs, and seeded random bit
// patterns.
func TestConversions(t *testing.T) {
	const seed = 20261205
	bin := ckernel.Compile(t, "convert", []string{"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
		filepath.Join(ckernel.ClientDir(t), "testdata", "convert.c")})
	var in []uint32
	near := func(f float32) {
		for _, g := range []float32{f, math.Nextafter32(f, float32(math.Inf(-1))), math.Nextafter32(f, float32(math.Inf(1)))} {
			in = append(in, math.Float32bits(g), math.Float32bits(-g))
		}
	}
	for h := range uint16(0x7c00) {
		a := float16.Frombits(h).Float32()
		near(a)
		near(a + (float16.Frombits(h+1).Float32()-a)/2) // the midpoint: exact in float32
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 1 << 18 {
		in = append(in, rng.Uint32())
	}
	var stdin bytes.Buffer
	for h := range 1 << 16 {
		fmt.Fprintf(&stdin, "h %x\n", h)
	}
	for _, u := range in {
		fmt.Fprintf(&stdin, "f %x\n", u)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &stdin
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	bad := 0
	for h := range 1 << 16 {
		var got uint32
		if !sc.Scan() {
			t.Fatalf("%s: output ends at fp16 %#04x", bin, h)
		}
		fmt.Sscanf(sc.Text(), "%x", &got)
		want := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		if got != want && !(isNaN32(got) && isNaN32(want) && got>>31 == want>>31) && bad < 10 {
			bad++
			t.Errorf("nv_f16_to_f32(%#04x) = %#08x, want %#08x", h, got, want)
		}
	}
	for i, u := range in {
		var g16, gb uint32
		if !sc.Scan() {
			t.Fatalf("%s: output ends at input %d", bin, i)
		}
		fmt.Sscanf(sc.Text(), "%x %x", &g16, &gb)
		f := math.Float32frombits(u)
		w16, wb := uint32(float16.Fromfloat32(f).Bits()), uint32(tensor.BF16FromFloat32(f).Bits())
		src := "a fp16 neighbourhood"
		if i >= len(in)-1<<18 {
			src = fmt.Sprintf("random, seed %d", seed)
		}
		if !sameHalf(g16, w16, 0x7c00, 0x0200) && bad < 10 {
			bad++
			t.Errorf("nv_f32_to_f16(%g, bits %#08x, %s) = %#04x, want %#04x", f, u, src, g16, w16)
		}
		if !sameHalf(gb, wb, 0x7f80, 0x0040) && bad < 10 {
			bad++
			t.Errorf("nv_f32_to_bf16(%g, bits %#08x, %s) = %#04x, want %#04x", f, u, src, gb, wb)
		}
	}
}

func isNaN32(u uint32) bool { return u&0x7f800000 == 0x7f800000 && u&0x7fffff != 0 }

// sameHalf reports whether 16-bit patterns got and want are equal, or both
// NaN (exponent field exp, quiet bit quiet) with the same sign and got quiet.
func sameHalf(got, want, exp, quiet uint32) bool {
	if got == want {
		return true
	}
	nan := func(b uint32) bool { return b&exp == exp && b&^(exp|0x8000) != 0 }
	return nan(got) && nan(want) && got&0x8000 == want&0x8000 && got&quiet != 0
}

// TestVectorAddProfiles runs the example driver in worker mode and the
// emulator on the same seeded inputs under each of the four profiles
// (overflow inf|saturate × subnormals keep|flush), for every dtype, and
// wants the same bits (any NaN equals any NaN). A third of the inputs are
// random bit patterns, a third near the smallest normal (sums that round
// into the subnormal range, or flush), a third in the top binade up to inf
// (sums that overflow), each of either sign.
func TestVectorAddProfiles(t *testing.T) {
	bin := ckernel.BuildExample(t, "vector_add")
	op, err := ops.Lookup("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	const n, seed = 4096, 20261205
	for _, num := range []tensor.Numerics{
		{Overflow: tensor.OverflowInf, Subnormals: tensor.SubnormalKeep},
		{Overflow: tensor.OverflowInf, Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalKeep},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
	} {
		prof := npu.Ascend910B()
		prof.Numerics = num
		emu, err := spec.Open("emulator", prof, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		drv, err := spec.Open("worker:"+bin, prof, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			p, err := op.Validate(ops.Params{"dtype": d.String()})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, uint64(d)))
			in := map[string]*tensor.Tensor{"x": edgeBits(rng, d, n), "y": edgeBits(rng, d, n)}
			what := fmt.Sprintf("vector_add dtype=%s n=%d seed=%d (PCG stream %d) under %s", d, n, seed, d, num)
			want, _, err := emu.Run(context.Background(), "vector_add", p, in)
			if err != nil {
				t.Fatalf("%s: emulator: %v", what, err)
			}
			got, _, err := drv.Run(context.Background(), "vector_add", p, in)
			if err != nil {
				t.Fatalf("%s: %s: %v", what, drv.Name(), err)
			}
			for i := range n {
				g, w := got["z"].Bits(i), want["z"].Bits(i)
				if g != w && !(d.IsFloat() && math.IsNaN(got["z"].Float64(i)) && math.IsNaN(want["z"].Float64(i))) {
					t.Errorf("%s: z[%d] = %#x from the example driver, the emulator's is %#x (x = %#x, y = %#x)",
						what, i, g, w, in["x"].Bits(i), in["y"].Bits(i))
					break
				}
			}
		}
		if c, ok := drv.(io.Closer); ok {
			if err := c.Close(); err != nil {
				t.Errorf("closing the worker %s: %v", bin, err)
			}
		}
	}
}

// edgeBits returns n elements of dtype d drawn as TestVectorAddProfiles
// says.
func edgeBits(rng *rand.Rand, d tensor.DType, n int) *tensor.Tensor {
	t := tensor.MustNew(d, n)
	var width, mant uint
	var expMask uint64
	switch d {
	case tensor.Float16:
		width, mant, expMask = 16, 10, 0x7c00
	case tensor.BFloat16:
		width, mant, expMask = 16, 7, 0x7f80
	case tensor.Float32:
		width, mant, expMask = 32, 23, 0x7f800000
	default: // int8: every pattern is an edge of something
		for i := range n {
			t.SetBits(i, uint64(uint8(rng.IntN(256))))
		}
		return t
	}
	for i := range n {
		var b uint64
		switch rng.IntN(3) {
		case 0:
			b = rng.Uint64() & (1<<width - 1)
		case 1: // subnormal or the two lowest binades
			b = rng.Uint64() & (uint64(1)<<(mant+2) - 1)
		default: // the top binade, up to inf
			b = min(expMask-uint64(1)<<mant+rng.Uint64()&(uint64(1)<<(mant+1)-1), expMask)
		}
		if rng.IntN(2) == 1 {
			b |= uint64(1) << (width - 1)
		}
		t.SetBits(i, b)
	}
	return t
}
