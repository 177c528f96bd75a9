package matchers_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/suites/matchers"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

var subject = verify.Subject{Op: "vector_add", Params: "dtype=fp16", Seed: 42, Case: "m"}

const firstLine = "vector_add dtype=fp16 seed=42 [m]"

// fp16 builds an fp16 tensor of exactly vals.
func fp16(t *testing.T, vals ...float64) *tensor.Tensor {
	t.Helper()
	tt, err := tensor.FromFloat64(tensor.Float16, []int{len(vals)}, vals, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// want: refs 1, 2, 3, 4 with bound 2^-10 each.
func want() *bound.Expected {
	w := bound.NewExpected(4)
	for i := range w.Ref {
		w.Ref[i] = float64(i + 1)
		w.Bound[i] = math.Ldexp(1, -10)
	}
	return w
}

// failures captures what an assertion reports.
func failures(t *testing.T) (gomega.Gomega, *[]string) {
	var msgs []string
	g := gomega.NewGomega(func(message string, _ ...int) { msgs = append(msgs, message) })
	return g, &msgs
}

var elementLine = regexp.MustCompile(`^  \[\d+\] .*got=[^,]+, want=[^,]+, bound=\S+$`)

func checkLayout(t *testing.T, msg string) {
	t.Helper()
	lines := strings.Split(msg, "\n")
	if lines[0] != firstLine {
		t.Errorf("first line %q, want %q", lines[0], firstLine)
	}
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "  [") {
			n++
			if !elementLine.MatchString(l) {
				t.Errorf("element line does not end with got/want/bound: %q", l)
			}
		}
	}
	if n == 0 {
		t.Errorf("no element lines in\n%s", msg)
	}
}

func TestBeWithinBound(t *testing.T) {
	g := gomega.NewWithT(t)
	ok := fp16(t, 1, 2, 3, 4)
	bad := fp16(t, 1, 2.00390625, 3, 4) // [1]: 2^-8 off, 4 bounds

	g.Expect(ok).To(matchers.BeWithinBound(want(), subject))
	g.Expect(bad).NotTo(matchers.BeWithinBound(want(), subject))

	// Failure message: subject, expectation, reason, worst elements.
	fg, msgs := failures(t)
	fg.Expect(bad).To(matchers.BeWithinBound(want(), subject))
	if len(*msgs) != 1 {
		t.Fatalf("messages %q", *msgs)
	}
	msg := (*msgs)[0]
	t.Logf("failure:\n%s", msg)
	checkLayout(t, msg)
	for _, s := range []string{
		"Expected fp16[4] to be within bound",
		"1 of 4 elements out of bound (tightness 4)",
		"  [1] got=2.0039062, want=2, bound=0.0009766",
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q", s)
		}
	}

	// Negated: the output passed; the message shows the elements nearest
	// their bound.
	close := fp16(t, 1.0009765625, 2, 3, 4) // [0]: 2^-10 off, exactly at the bound
	g.Expect(close).To(matchers.BeWithinBound(want(), subject))
	fg, msgs = failures(t)
	fg.Expect(close).NotTo(matchers.BeWithinBound(want(), subject))
	msg = (*msgs)[0]
	t.Logf("negated:\n%s", msg)
	checkLayout(t, msg)
	for _, s := range []string{
		"Expected fp16[4] not to be within bound",
		"but it does: all 4 elements within bound (tightness 1)",
		"  [0] got=1.0009766, want=1, bound=0.0009766",
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("negated message lacks %q", s)
		}
	}

	// Errors (fail either way): wrong actual type, length mismatch.
	fg, msgs = failures(t)
	fg.Expect(3.0).NotTo(matchers.BeWithinBound(want(), subject))
	fg.Expect(fp16(t, 1, 2)).NotTo(matchers.BeWithinBound(want(), subject))
	if len(*msgs) != 2 || !strings.Contains((*msgs)[0], "expects a non-nil *tensor.Tensor, got float64") ||
		!strings.Contains((*msgs)[1], firstLine+": got fp16[2] with 2 elements, want 4 elements") {
		t.Errorf("error messages %q", *msgs)
	}
}

func TestMatchGoldenBits(t *testing.T) {
	g := gomega.NewWithT(t)
	gold := fp16(t, 1, 0, 2, math.NaN())
	g.Expect(gold.Clone()).To(matchers.MatchGoldenBits(gold, subject))

	neg := gold.Clone()
	neg.SetBits(1, 0x8000) // −0 for +0
	neg.SetBits(2, 0x4001) // 2 + 1 ulp
	g.Expect(neg).NotTo(matchers.MatchGoldenBits(gold, subject))
	fg, msgs := failures(t)
	fg.Expect(neg).To(matchers.MatchGoldenBits(gold, subject))
	msg := (*msgs)[0]
	t.Logf("failure:\n%s", msg)
	wantMsg := firstLine + "\n" +
		"Expected fp16[4] to match golden bits of fp16[4]\n" +
		"2 of 4 elements differ (first 2 by index):\n" +
		"  [1] got=0x8000 (-0), want=0x0000 (0)\n" +
		"  [2] got=0x4001 (2.0019531), want=0x4000 (2)"
	if msg != wantMsg {
		t.Errorf("message:\n%s\nwant:\n%s", msg, wantMsg)
	}

	fg, msgs = failures(t)
	fg.Expect(gold.Clone()).NotTo(matchers.MatchGoldenBits(gold, subject))
	if want := firstLine + "\nExpected fp16[4] not to match golden bits of fp16[4]\nbut all 4 elements are bit-identical"; (*msgs)[0] != want {
		t.Errorf("negated message:\n%s\nwant:\n%s", (*msgs)[0], want)
	}

	// Another dtype is a mismatch, with a message saying so.
	f32, _ := tensor.FromFloat64(tensor.Float32, []int{4}, []float64{1, 0, 2, 0}, tensor.Numerics{})
	g.Expect(f32).NotTo(matchers.MatchGoldenBits(gold, subject))
	fg, msgs = failures(t)
	fg.Expect(f32).To(matchers.MatchGoldenBits(gold, subject))
	if !strings.HasSuffix((*msgs)[0], "dtype fp32, golden has fp16") {
		t.Errorf("dtype message %q", (*msgs)[0])
	}
}

func TestSatisfyPolicy(t *testing.T) {
	g := gomega.NewWithT(t)
	ulp1 := verify.MustParsePolicy("ulp:1")
	oneOff := fp16(t, 1, 2, 3.001953125, 4) // [2]: 1 ulp (2^-9 at 3)
	twoOff := fp16(t, 1, 2, 3.00390625, 4)  // [2]: 2 ulps

	g.Expect(oneOff).To(matchers.SatisfyPolicy(ulp1, want(), nil, subject))
	g.Expect(twoOff).NotTo(matchers.SatisfyPolicy(ulp1, want(), nil, subject))

	fg, msgs := failures(t)
	fg.Expect(twoOff).To(matchers.SatisfyPolicy(ulp1, want(), nil, subject))
	msg := (*msgs)[0]
	t.Logf("failure:\n%s", msg)
	checkLayout(t, msg)
	for _, s := range []string{
		"Expected fp16[4] to satisfy policy ulp(n=1)",
		"1 of 4 elements more than 1 ulp (fp16) from want; max 2 ulp",
		"  [2] 2 ulp: got=3.0039062, want=3, bound=0.001953",
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q", s)
		}
	}

	fg, msgs = failures(t)
	fg.Expect(oneOff).NotTo(matchers.SatisfyPolicy(ulp1, want(), nil, subject))
	msg = (*msgs)[0]
	checkLayout(t, msg)
	if !strings.Contains(msg, "Expected fp16[4] not to satisfy policy ulp(n=1)\nbut it does: all 4 elements within 1 ulp") {
		t.Errorf("negated message:\n%s", msg)
	}

	// exact through SatisfyPolicy: uses golden, no reference needed.
	exact := verify.MustParsePolicy("exact")
	g.Expect(oneOff).To(matchers.SatisfyPolicy(exact, nil, oneOff.Clone(), subject))
	g.Expect(oneOff).NotTo(matchers.SatisfyPolicy(exact, nil, twoOff, subject))
	g.Expect(oneOff).NotTo(matchers.SatisfyPolicy(exact, nil, nil, subject)) // no golden: fails, saying so
	fg, msgs = failures(t)
	fg.Expect(oneOff).To(matchers.SatisfyPolicy(exact, nil, twoOff, subject))
	if m := (*msgs)[0]; !strings.Contains(m, "[2] bits 0x4201, golden 0x4202: got=3.0019531, want=3.0039062, bound=0") {
		t.Errorf("exact message:\n%s", m)
	}
}
