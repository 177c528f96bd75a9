package verify

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

func TestSubjectString(t *testing.T) {
	for _, c := range []struct {
		s    Subject
		want string
	}{
		{Subject{Op: "vector_add", Params: "dtype=fp16", Seed: 42, Case: "edge"}, "vector_add dtype=fp16 seed=42 [edge]"},
		{Subject{Op: "vector_add", Params: "dtype=fp16", Seed: 42}, "vector_add dtype=fp16 seed=42"},
		{Subject{Op: "gemm", Seed: 0}, "gemm seed=0"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, name := range map[string]string{
		"":                                "bound",
		"bound":                           "bound",
		" exact ":                         "exact",
		"allclose":                        "allclose",
		"allclose:rtol=1e-3,atol=1e-5":    "allclose(rtol=0.001,atol=1e-05)",
		"allclose:atol=1e-5, rtol=1e-3":   "allclose(rtol=0.001,atol=1e-05)",
		"allclose(rtol=0.001,atol=1e-05)": "allclose(rtol=0.001,atol=1e-05)",
		"allclose:atol=2^-16":             "allclose(atol=1.52587890625e-05)",
		"ulp":                             "ulp(n=1)",
		"ulp:3":                           "ulp(n=3)",
		"ulp:n=3":                         "ulp(n=3)",
		"ulp(n=0.5)":                      "ulp(n=0.5)",
		"ascend-thousandth":               "ascend-thousandth(n=1)",
		"ascend-thousandth:n=2":           "ascend-thousandth(n=2)",
		"ascend-mere":                     "ascend-mere",
		"ascend-mixed":                    "ascend-mixed",
	} {
		p, err := ParsePolicy(in)
		if err != nil {
			t.Errorf("ParsePolicy(%q): %v", in, err)
			continue
		}
		if p.Name() != name {
			t.Errorf("ParsePolicy(%q).Name() = %q, want %q", in, p.Name(), name)
		}
		// Name is canonical: it parses back to the same policy.
		if q, err := ParsePolicy(p.Name()); err != nil || q != p {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", p.Name(), q, err, p)
		}
	}

	for in, msg := range map[string]string{
		"nope":                     "unknown policy \"nope\" (want one of bound, exact, allclose[:rtol=R,atol=A], ulp[:N], ascend-thousandth[:n=N], ascend-mere, ascend-mixed, ascend-dual)",
		"allclose:tol=1":           "unknown option \"tol\" (want rtol, atol",
		"allclose:rtol=1,rtol=2":   "option rtol given twice",
		"allclose:rtol=x":          "bad number \"x\"",
		"allclose(rtol=1":          "missing closing parenthesis",
		"ulp:-1":                   "must be a finite number ≥ 0",
		"ulp:inf":                  "must be a finite number ≥ 0",
		"ulp:2^x":                  "bad power of two",
		"bound:strict=1":           "policy bound takes no options",
		"ascend-mere(th=1)":        "policy ascend-mere takes no options",
		"ascend-thousandth:n=0":    "n must be > 0",
		"ascend-thousandth:rtol=1": "unknown option \"rtol\" (want n",
	} {
		_, err := ParsePolicy(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParsePolicy(%q) error %v, want it to contain %q", in, err, msg)
		}
	}

	want := []string{"bound", "exact", "allclose", "ulp", "ascend-thousandth", "ascend-mere", "ascend-mixed", "ascend-dual"}
	if got := PolicyNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("PolicyNames() = %v, want %v", got, want)
	}
	for _, n := range PolicyNames() {
		if _, err := ParsePolicy(n); err != nil {
			t.Errorf("listed name %q does not parse: %v", n, err)
		}
	}
}

// fixture: vector_add-like case with outputs "z" (fp16, 2x3) and "flag"
// (uint8), z wrong at two elements.
func fixture(t *testing.T) (Subject, map[string]*tensor.Tensor, map[string]*bound.Expected, map[string]*tensor.Tensor) {
	s := Subject{Op: "vector_add", Params: "dtype=fp16", Seed: 42, Case: "edge"}
	ref := []float64{1, 2, 3, 4, 5, 6}
	z := mk(t, tensor.Float16, []float64{1, 2, 3.0078125, 4, 5, math.NaN()}) // [2]: +2^-7 = 4 ulps = 4 bounds; [5]: NaN
	z.Shape = []int{2, 3}
	wz := expected(ref, pow2(-9)) // one ulp at [2,4)
	flag := mk(t, tensor.Uint8, []float64{1})
	got := map[string]*tensor.Tensor{"z": z, "flag": flag}
	want := map[string]*bound.Expected{"z": wz, "flag": expected([]float64{1}, 0)}
	golden := map[string]*tensor.Tensor{"flag": flag.Clone()}
	return s, got, want, golden
}

func TestCheckAndFailure(t *testing.T) {
	s, got, want, golden := fixture(t)
	policies := []Policy{MustParsePolicy("bound"), MustParsePolicy("ulp"), MustParsePolicy("exact")}
	res, err := Check(s, got, want, golden, policies)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass || len(res.Outputs) != 2 || res.Outputs[0].Name != "flag" || res.Outputs[1].Name != "z" {
		t.Fatalf("result %+v", res)
	}
	flag, z := res.Outputs[0], res.Outputs[1]
	if !flag.Pass() || z.Pass() || len(z.Verdicts) != 3 {
		t.Errorf("flag pass %v, z pass %v, z verdicts %d", flag.Pass(), z.Pass(), len(z.Verdicts))
	}
	if z.Metrics.OutOfBound != 1 || z.Metrics.NonFiniteMismatch != 1 || z.Metrics.FirstBad != 2 {
		t.Errorf("z metrics %+v", z.Metrics)
	}

	report := res.Failure()
	t.Logf("report:\n%s", report)
	lines := strings.Split(report, "\n")
	if lines[0] != "vector_add dtype=fp16 seed=42 [edge]: 3 of 6 verdicts failed" {
		t.Errorf("first line %q", lines[0])
	}
	wantLines := []string{
		`output "z" (fp16[2 3]), policy bound: 1 of 6 elements out of bound (tightness 4); 1 non-finite class mismatch; first wrong element at index 2`,
		`  [5] (1,2) class nan, allowed finite: got=NaN, want=6, bound=0.001953`,
		`  [2] (0,2) got=3.0078125, want=3, bound=0.001953`,
		`output "z" (fp16[2 3]), policy ulp(n=1): 1 of 6 elements more than 1 ulp (fp16) from want; max 4 ulp; 1 non-finite class mismatch`,
		`  [5] (1,2) class nan, allowed finite: got=NaN, want=6, bound=0.001953`,
		`  [2] (0,2) 4 ulp: got=3.0078125, want=3, bound=0.001953`,
		`output "z" (fp16[2 3]), policy exact: no golden tensor (expected bits) for this output; exact needs one`,
	}
	if strings.Join(lines[1:], "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("report body:\n%s\nwant:\n%s", strings.Join(lines[1:], "\n"), strings.Join(wantLines, "\n"))
	}
	elem := regexp.MustCompile(`got=[^,]+, want=[^,]+, bound=\S+$`)
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "  ") && !elem.MatchString(l) {
			t.Errorf("element line does not end with got/want/bound: %q", l)
		}
	}

	// A passing result has an empty report; no policies means bound.
	z2 := mk(t, tensor.Float16, []float64{1, 2, 3, 4, 5, 6})
	got["z"] = z2
	res, err = Check(s, got, want, nil, nil)
	if err != nil || !res.Pass || res.Failure() != "" || res.Outputs[1].Verdicts[0].Policy != "bound" {
		t.Errorf("passing check: %+v, %v, report %q", res, err, res.Failure())
	}
}

// external is a Policy implemented outside the package.
type external struct{}

func (external) Name() string { return "external" }
func (external) Judge(in Input) Verdict {
	return Verdict{Pass: in.Got.Len() == 0, Reason: "never passes non-empty outputs"}
}

func TestCheckExternalPolicy(t *testing.T) {
	s, got, want, golden := fixture(t)
	res, err := Check(s, got, want, golden, []Policy{external{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass || res.Outputs[0].Verdicts[0].Policy != "external" || !strings.Contains(res.Failure(), `policy external: never passes`) {
		t.Errorf("%s", res.Failure())
	}
}

func TestCheckErrors(t *testing.T) {
	s, got, want, golden := fixture(t)
	check := func(mod func(), msg string) {
		t.Helper()
		s, got, want, golden = fixture(t)
		mod()
		_, err := Check(s, got, want, golden, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "vector_add dtype=fp16 seed=42 [edge]: ") || !strings.Contains(err.Error(), msg) {
			t.Errorf("error %v, want one starting with the subject and containing %q", err, msg)
		}
	}
	check(func() { delete(got, "z") }, `output "z": missing`)
	check(func() { got["extra"] = got["z"] }, `output "extra": not in the expected outputs (flag, z)`)
	check(func() { want["z"] = expected([]float64{1}, 0) }, `output "z": got fp16[2 3] with 6 elements, want 1 elements`)
	check(func() { want["z"].Bound = want["z"].Bound[:2] }, `malformed expected set`)
	check(func() { want["z"] = nil }, `output "z": no expected set`)
	_, err := Check(s, got, want, golden, []Policy{nil})
	if err == nil || !strings.Contains(err.Error(), "policy 0 is nil") {
		t.Errorf("nil policy: %v", err)
	}
}

func TestFormatValue(t *testing.T) {
	for x, want := range map[float64]string{
		1:                    "1",
		0.0999755859375:      "0.099975586", // fp16(0.1), shortest as a float32
		0.1:                  "0.1",         // not a float32 value: shortest float64
		math.Inf(-1):         "-Inf",
		math.Copysign(0, -1): "-0",
		65504:                "65504",
	} {
		if got := FormatValue(x); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", x, got, want)
		}
	}
	e := Element{Index: 3, Got: math.Inf(1), Ref: 65504, Bound: 32, Alt: bound.PosInf | bound.NaN}
	if got := FormatElement(e, []int{4}); got != "[3] got=+Inf, want=65504 or +inf|nan, bound=32" {
		t.Errorf("FormatElement = %q", got)
	}
}

func TestAddFailure(t *testing.T) {
	s, got, want, golden := fixture(t)
	got["z"] = mk(t, tensor.Float16, []float64{1, 2, 3, 4, 5, 6})
	res, err := Check(s, got, want, golden, nil)
	if err != nil || !res.Pass {
		t.Fatalf("%v %v", err, res.Failure())
	}
	res.AddFailure("x", "inputs-unchanged", `input "x" was modified by the backend (first difference at element 3)`)
	res.AddFailure("z", "inputs-unchanged", "z too")
	if res.Pass || len(res.Outputs) != 3 || res.Outputs[1].Name != "x" || len(res.Outputs[2].Verdicts) != 2 {
		t.Fatalf("%+v", res)
	}
	want2 := "vector_add dtype=fp16 seed=42 [edge]: 2 of 4 verdicts failed\n" +
		`"x", policy inputs-unchanged: input "x" was modified by the backend (first difference at element 3)` + "\n" +
		`output "z" (fp16[6]), policy inputs-unchanged: z too`
	if f := res.Failure(); f != want2 {
		t.Errorf("report:\n%s\nwant:\n%s", f, want2)
	}
}
