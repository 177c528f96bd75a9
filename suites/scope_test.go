package suites_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/suites"
)

func TestParseOps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  ", nil},
		{"vector_add", []string{"vector_add"}},
		{" gemm , vector_add,gemm,", []string{"gemm", "vector_add"}},
	} {
		got, err := suites.ParseOps(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseOps(%q): got %q, %v, want %q, nil", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"vector_ad", "gemm,nope", ","} {
		_, err := suites.ParseOps(in)
		if err == nil || !strings.Contains(err.Error(), suites.OpsEnv) || !strings.Contains(err.Error(), strings.Join(ops.Names(), ", ")) {
			t.Errorf("ParseOps(%q): got error %v, want one naming %s and listing every op (%s)", in, err, suites.OpsEnv, strings.Join(ops.Names(), ", "))
		}
	}
}

// TestScopeLabelFilter holds the filter a scope makes to what it must
// select, through Ginkgo's own filter parser.
func TestScopeLabelFilter(t *testing.T) {
	specs := map[string][]string{
		"vector_add UT":      {"UT", "op:vector_add", "dtype:fp16"},
		"gemm UT":            {"UT", "op:gemm", "mode:fp16_fp32acc"},
		"emulator perf":      {"op:vector_add", "emulator", "perf"},
		"CLI":                {"ST", "emulator", "op-independent"},
		"op-independent ST":  {"ST", "op-independent"},
		"vector_add ST long": {"ST", "op:vector_add", "long"},
	}
	for _, tc := range []struct {
		scope suites.Scope
		user  string
		want  []string // the specs selected, sorted
	}{
		{suites.Scope{Emulator: true}, "", nil}, // "" filter: everything
		{suites.Scope{}, "", []string{"op-independent ST", "vector_add ST long", "vector_add UT", "gemm UT"}},
		{suites.Scope{Ops: []string{"vector_add"}}, "", []string{"op-independent ST", "vector_add ST long", "vector_add UT"}},
		{suites.Scope{Ops: []string{"vector_add"}, Emulator: true}, "", []string{"CLI", "emulator perf", "op-independent ST", "vector_add ST long", "vector_add UT"}},
		{suites.Scope{Ops: []string{"vector_add", "gemm"}}, "!long", []string{"gemm UT", "op-independent ST", "vector_add UT"}},
	} {
		f := tc.scope.LabelFilter(tc.user)
		if tc.want == nil {
			if f != "" {
				t.Errorf("scope %+v, user filter %q: got filter %q, want none", tc.scope, tc.user, f)
			}
			continue
		}
		match, err := types.ParseLabelFilter(f)
		if err != nil {
			t.Fatalf("scope %+v, user filter %q: filter %q does not parse: %v", tc.scope, tc.user, f, err)
		}
		var got []string
		for name, labels := range specs {
			if match(labels) {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("scope %+v, user filter %q: filter %q selects %q, want %q", tc.scope, tc.user, f, got, tc.want)
		}
	}
}

func TestScopeBanner(t *testing.T) {
	s := suites.Scope{Backend: "exec:./k", Ops: []string{"vector_add"}}
	got := s.Banner()
	for _, want := range []string{"exec:./k", "implements vector_add", "skipping decode_attention, gemm,", suites.OpsEnv, "label emulator"} {
		if !strings.Contains(got, want) {
			t.Errorf("scope %+v: banner %q, want it to contain %q", s, got, want)
		}
	}
	if strings.Count(got, "\n") != 0 {
		t.Errorf("scope %+v: banner %q, want one line", s, got)
	}
}

// specReport builds a SpecReport of an It with the given labels and state.
func specReport(text string, state types.SpecState, container []string, leaf ...string) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state,
		ContainerHierarchyTexts: []string{"c"}, ContainerHierarchyLabels: [][]string{container}, LeafNodeLabels: leaf}
}

func TestLabelProblems(t *testing.T) {
	good := types.Report{SpecReports: types.SpecReports{
		specReport("a", types.SpecStatePassed, []string{"UT", "op:gemm"}, "dtype:fp16"),
		specReport("b", types.SpecStatePassed, []string{"ST", "emulator", "op-independent"}),
		{LeafNodeType: types.NodeTypeBeforeSuite}, // not a spec
	}}
	if p := suites.LabelProblems(good); len(p) != 0 {
		t.Errorf("well-labelled specs: got problems %q, want none", p)
	}
	for name, sr := range map[string]types.SpecReport{
		"no op label":          specReport("x", types.SpecStatePassed, []string{"UT"}),
		"two op labels":        specReport("x", types.SpecStatePassed, []string{"op:gemm"}, "op:vector_add"),
		"op and independent":   specReport("x", types.SpecStatePassed, []string{"op:gemm", "op-independent"}),
		"op label of no op":    specReport("x", types.SpecStatePassed, []string{"op:gemmm"}),
		"undocumented label":   specReport("x", types.SpecStatePassed, []string{"op:gemm", "slow"}),
		"undocumented prefix":  specReport("x", types.SpecStatePassed, []string{"op:gemm", "layout:paged"}),
		"nothing at all":       specReport("x", types.SpecStatePassed, nil),
		"independent, unknown": specReport("x", types.SpecStatePassed, []string{"op-independent", "Fast"}),
	} {
		r := types.Report{SpecReports: types.SpecReports{sr}}
		if p := suites.LabelProblems(r); len(p) != 1 {
			t.Errorf("%s (labels %v): got problems %q, want one", name, sr.Labels(), p)
		}
	}
}

func TestSummarize(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{
		specReport("1", types.SpecStatePassed, []string{"op:vector_add"}),
		specReport("2", types.SpecStateFailed, []string{"op:vector_add"}),
		specReport("3", types.SpecStatePanicked, []string{"op:vector_add"}),
		specReport("4", types.SpecStateSkipped, []string{"op:vector_add"}),
		specReport("5", types.SpecStateSkipped, []string{"op:gemm"}),
		specReport("6", types.SpecStatePassed, []string{"op-independent"}),
		{LeafNodeType: types.NodeTypeAfterSuite, State: types.SpecStateFailed},
	}}
	got := suites.Summarize(r)
	want := []suites.Tally{
		{Op: "gemm", Skipped: 1, Total: 1},
		{Op: "vector_add", Ran: 3, Passed: 1, Failed: 2, Skipped: 1, Total: 4},
		{Op: "", Ran: 1, Passed: 1, Total: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Summarize: got %+v, want %+v", got, want)
	}
	text := suites.RenderSummary("exec:./k", got)
	for _, line := range []string{"backend exec:./k", "vector_add", "(op-independent)", "total"} {
		if !strings.Contains(text, line) {
			t.Errorf("RenderSummary: %q lacks %q", text, line)
		}
	}
}

// TestRelativeKernelPath: a relative kernel path in NPUVERIFY_BACKEND
// resolves against the user's directory (here set by NPUVERIFY_DIR), not
// the suite's package directory go test runs it in; the kernel runs
// there, under exec: and worker:.
func TestRelativeKernelPath(t *testing.T) {
	bin := ckernel.Build(t)
	dir := t.TempDir()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "my-kernel"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(suites.DirEnv, dir)
	c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 257}, Dist: ops.DistUniform, Seed: 1}
	for _, mode := range []string{"exec:", "worker:"} {
		b, err := selectBackend(mode + "./my-kernel")
		if err != nil {
			t.Fatalf("%s: %s./my-kernel with %s=%s: %v", harness.Subject(c), mode, suites.DirEnv, dir, err)
		}
		res, err := harness.Run(context.Background(), b, c, harness.Options{})
		if err != nil || !res.Verify.Pass {
			t.Errorf("%s: on %s./my-kernel with %s=%s: got err %v, pass %v, want nil, true",
				harness.Subject(c), mode, suites.DirEnv, dir, err, err == nil && res.Verify.Pass)
		}
		if cl, ok := b.(interface{ Close() error }); ok {
			cl.Close()
		}
	}
}

// TestUserDirIsParentsDir: with no NPUVERIFY_DIR, the user's directory is
// the one the process that started the suite (go test, a shell) runs in,
// not the suite's own directory, which go test also puts in PWD.
func TestUserDirIsParentsDir(t *testing.T) {
	if os.Getenv("NPUVERIFY_TEST_PRINT_USERDIR") != "" {
		// Elsewhere than the parent, as go test runs a suite.
		if err := os.Chdir("/"); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("userdir=" + suites.UserDir() + "\n")
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("UserDir reads the parent's directory from /proc: Linux only")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to start the test binary from another directory")
	}
	dir := t.TempDir()
	// sh stays the parent (": " after the command keeps it from exec'ing).
	cmd := exec.Command(sh, "-c", `cd "$1" && "$0" -test.run='^TestUserDirIsParentsDir$'; :`, os.Args[0], dir)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, suites.DirEnv+"=") }),
		"NPUVERIFY_TEST_PRINT_USERDIR=1", "PWD=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("running the test binary from %s: %v\n%s", dir, err, out)
	}
	want, _ := filepath.EvalSymlinks(dir)
	if !strings.Contains(string(out), "userdir="+want+"\n") {
		t.Errorf("UserDir in a suite started from %s: got output %q, want a line userdir=%s", dir, out, want)
	}
}

// TestLabelsDocumented holds docs/testing-your-kernel.md's label tables to
// suites.LabelNames and suites.LabelPrefixes, both ways: the page lists
// every label and prefix the suites use (LabelProblems holds every spec
// to these lists on each run), and none that they do not.
func TestLabelsDocumented(t *testing.T) {
	const page = "../docs/testing-your-kernel.md"
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Labels\n")
	if !ok {
		t.Fatalf("%s: no \"### Labels\" section", page)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var names, prefixes []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		label, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if strings.HasSuffix(label, ":") {
			prefixes = append(prefixes, label)
		} else {
			names = append(names, label)
		}
	}
	if !slices.Equal(names, suites.LabelNames) {
		t.Errorf("%s: label table lists %q, want suites.LabelNames %q in that order", page, names, suites.LabelNames)
	}
	if !slices.Equal(prefixes, suites.LabelPrefixes) {
		t.Errorf("%s: label prefix table lists %q, want suites.LabelPrefixes %q in that order", page, prefixes, suites.LabelPrefixes)
	}
}
