package ops_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// updateBounds rewrites the pinned digests: go test ./ops -run TestGEMMBoundDigest -update-bounds.
// Only rewrite them from code whose bounds are known good: the test exists
// to show that a refactoring of the bound changed nothing.
var updateBounds = flag.Bool("update-bounds", false, "rewrite ops/testdata/gemm_bound.sha256 from the current gemm bound")

const gemmDigestFile = "testdata/gemm_bound.sha256"

// gemmDigestProfiles are the numerics profiles every case is also digested
// under, so that the flush and saturate paths of the bound are pinned even
// where no golden case uses them.
var gemmDigestProfiles = []tensor.Numerics{
	{},
	{Overflow: tensor.OverflowSaturate},
	{Subnormals: tensor.SubnormalFlush},
	{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
}

// gemmSuiteCases lists the cases of the gemm UT suite: the samples of
// gemm's record (opdb.Info.Samples), named as the digest file keys them.
func gemmSuiteCases() []ops.Case {
	info, err := opdb.Lookup("gemm")
	if err != nil {
		panic(err) // gemm is registered by package opdb's init
	}
	var out []ops.Case
	for _, c := range info.Samples() {
		p, d := c.Params, c.Dims
		c.Name = fmt.Sprintf("%s_%dx%dx%d_a%s_b%s_%s_%s", p["mode"], d["m"], d["k"], d["n"], p["alpha"], p["beta"], c.Dist, p["accumulate"])
		out = append(out, c)
	}
	return out
}

// gemmCaseDigest returns the sha256 of everything Expect returns for c
// under num: per output (sorted by name) the float64 bits of every
// reference and bound and every special-class set.
func gemmCaseDigest(c ops.Case, num tensor.Numerics) (string, error) {
	op := ops.GEMM
	p, err := op.Validate(c.Params)
	if err != nil {
		return "", fmt.Errorf("validate: %w", err)
	}
	in, err := op.Generate(p, c.Gen())
	if err != nil {
		return "", fmt.Errorf("generate: %w", err)
	}
	exp, err := op.Expect(p, in, num)
	if err != nil {
		return "", fmt.Errorf("expect: %w", err)
	}
	h := sha256.New()
	var buf [8]byte
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range exp {
			if !yield(k) {
				return
			}
		}
	}) {
		e := exp[name]
		fmt.Fprintf(h, "%s:%d\n", name, e.Len())
		for i := range e.Ref {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(e.Ref[i]))
			h.Write(buf[:])
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(e.Bound[i]))
			h.Write(buf[:])
			h.Write([]byte{byte(e.Alt[i])})
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestGEMMBoundDigest pins gemm's Expected (references, bounds and
// special classes, bit for bit) on every golden gemm case under its own
// numerics profile, on every case of the gemm UT suite, and on all of
// them again under each of the four overflow × subnormal profiles.
//
// The pinned digests in testdata/gemm_bound.sha256 were first derived
// from the implementation before the bound algebra moved into package
// bound (the private interval code of ops/gemm_bound.go at commit
// 3feaef0), and the refactoring onto the public algebra left every one
// unchanged. They were regenerated once, deliberately, when S = Σ|a||b|
// and the positive and negative sums of the overflow test began to be
// rounded up (bound.MagUp): computed in float64 they may lie below the
// true sums by γ_{K−1}(2^-53) relative, so the old bounds were not
// strictly rigorous (TestGEMMMagnitudeRoundedUp shows such a case). Every
// changed bound is larger, by that relative amount of its S terms; the
// references and special classes are unchanged. One line per case, so a
// failure names the case.
func TestGEMMBoundDigest(t *testing.T) {
	var cases []ops.Case
	for _, c := range goldenGEMMCases(t) {
		// Recipes (the large cases) are left out: five profiles of a
		// 1.5 M-output bound cost seconds, and the bound is the same code
		// at every size.
		if !c.Recipe {
			c.Name = "golden/" + c.Name
			cases = append(cases, c)
		}
	}
	for _, c := range gemmSuiteCases() {
		c.Name = "ut/" + c.Name
		cases = append(cases, c)
	}
	type line struct {
		key, sum string
		c        ops.Case
	}
	var got []line
	for _, c := range cases {
		own := tensor.Numerics{}
		if c.Numerics != nil {
			own = *c.Numerics
		}
		// The case's own profile, then the sweep, all in one digest.
		h := sha256.New()
		for _, num := range append([]tensor.Numerics{own}, gemmDigestProfiles...) {
			sum, err := gemmCaseDigest(c, num)
			if err != nil {
				t.Fatalf("gemm %s params %v seed %d: numerics %s: %v", c.Name, c.Params, c.Seed, num, err)
			}
			fmt.Fprintf(h, "%s %s\n", num, sum)
		}
		got = append(got, line{c.Name, hex.EncodeToString(h.Sum(nil)), c})
	}
	if *updateBounds {
		var b strings.Builder
		b.WriteString("# sha256 of gemm's Expected (ref, bound, alt bits) per case: under its own numerics profile,\n")
		b.WriteString("# then overflow inf|saturate × subnormals keep|flush.\n")
		b.WriteString("# Written by: go test ./ops -run TestGEMMBoundDigest -update-bounds\n")
		for _, l := range got {
			fmt.Fprintf(&b, "%s %s\n", l.key, l.sum)
		}
		if err := os.MkdirAll(filepath.Dir(gemmDigestFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(gemmDigestFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d digests to %s", len(got), gemmDigestFile)
		return
	}
	f, err := os.Open(gemmDigestFile)
	if err != nil {
		t.Fatalf("gemm bound digest: %v (write it with -update-bounds from known-good code)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		want[l[:i]] = l[i+1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Errorf("gemm bound digest: %d cases × profiles now, %d pinned in %s", len(got), len(want), gemmDigestFile)
	}
	bad := 0
	for _, l := range got {
		if w, ok := want[l.key]; !ok || w != l.sum {
			bad++
			if bad <= 20 {
				t.Errorf("gemm params %v seed %d: bound digest %s: got %s / want %s", l.c.Params, l.c.Seed, l.key, l.sum, w)
			}
		}
	}
	if bad > 0 {
		t.Errorf("gemm bound digest: %d of %d digests differ", bad, len(got))
	}
}
