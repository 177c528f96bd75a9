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
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/internal/clienttest"
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

// TestVectorAddProfiles holds the C example driver (clients/c/examples/vector_add.c), served as a worker, to the
// emulator bit for bit under every numerics profile and dtype
// (clienttest.VectorAddProfiles says on which inputs).
func TestVectorAddProfiles(t *testing.T) {
	bin := ckernel.BuildExample(t, "vector_add")
	clienttest.VectorAddProfiles(t, "worker:"+bin, 20261205)
}
