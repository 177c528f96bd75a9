package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// ---- the C kernel ----

// quoteArg quotes s for SplitCommandLine.
func quoteArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newExec(tb testing.TB, cmdline string, opt backend.ExecOptions) *backend.Exec {
	tb.Helper()
	e, err := backend.NewExec(cmdline, opt)
	if err != nil {
		tb.Fatalf("NewExec(%q): %v", cmdline, err)
	}
	return e
}

// runCase runs c on b and reports a failed verification or an error with
// the case's subject first and got / want / bound last.
func runCase(t *testing.T, b backend.Backend, c ops.Case) *harness.Result {
	t.Helper()
	r, err := harness.Run(context.Background(), b, c, harness.Options{})
	if err != nil {
		t.Errorf("%s: %v; want a judged result", harness.Subject(c), err)
		return nil
	}
	if !r.Pass() {
		t.Errorf("%s", r.Verify.Failure())
	}
	return r
}

// runCases runs cs on b, a few at a time (each case is a process, mostly
// waiting on the file system), and returns how many ran.
func runCases(t *testing.T, b backend.Backend, cs []ops.Case, check func(*harness.Result, ops.Case)) int {
	t.Helper()
	work := make(chan ops.Case)
	var wg sync.WaitGroup
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if r := runCase(t, b, c); r != nil && check != nil {
					check(r, c)
				}
			}
		}()
	}
	for _, c := range cs {
		work <- c
	}
	close(work)
	wg.Wait()
	return len(cs)
}

// TestExecCKernel runs the independent C kernel through the exec backend
// and the harness with the default bound policy: vector_add in every dtype
// at edge sizes and every distribution, gemm fp16_fp32acc (which sums in an
// order neither of the emulator's models uses) over edge shapes and
// alpha/beta, numerics overrides passed through case.json, and the
// embedded golden store (the default golden set; golden verify holds it
// equal to the set regenerated from opdb, which this test also ran).
func TestExecCKernel(t *testing.T) {
	bin := ckernel.Build(t)
	b := newExec(t, quoteArg(bin), backend.ExecOptions{Timeout: 20 * time.Second})
	var cases int
	start := time.Now()

	t.Run("vector_add", func(t *testing.T) {
		op, err := ops.Lookup("vector_add")
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257, 4095, 4097, 16385}
		var cs []ops.Case
		for _, dt := range []string{"fp16", "fp32", "bf16", "int8"} {
			for _, dist := range op.Dists() {
				for i, n := range sizes {
					cs = append(cs, ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
						Dims: map[string]int{"n": n}, Dist: dist, Seed: uint64(1000 + i)})
				}
			}
		}
		cases += runCases(t, b, cs, func(r *harness.Result, c ops.Case) {
			if r.Measurement == nil || len(r.Measurement.KernelSeconds) == 0 {
				t.Errorf("%s: got cost nil, want the kernel's timing.json", harness.Subject(c))
			}
		})
	})

	t.Run("gemm_fp16_fp32acc", func(t *testing.T) {
		op, err := ops.Lookup("gemm")
		if err != nil {
			t.Skipf("gemm: %v (not registered yet)", err)
		}
		shapes := [][3]int{{1, 1, 1}, {0, 4, 3}, {2, 0, 3}, {3, 5, 0}, {3, 5, 7}, {16, 16, 16}, {17, 33, 15},
			{31, 64, 33}, {1, 1000, 1}, {64, 128, 32}, {128, 256, 64}}
		params := []ops.Params{
			{},
			{"mode": "fp16_fp32acc", "alpha": "0.5", "beta": "1.5"},
			{"alpha": "-2", "beta": "-0.25", "accumulate": "blocked16"},
			{"alpha": "3", "accumulate": "blocked16"},
			{"beta": "1"},
		}
		var cs []ops.Case
		for pi, p := range params {
			dists := op.Dists()
			if pi > 0 { // alpha, beta and accumulate variants: fewer distributions
				dists = []string{ops.DistUniform, ops.DistSpecial, ops.DistCancel}
			}
			for _, dist := range dists {
				for si, s := range shapes {
					cs = append(cs, ops.Case{Op: "gemm", Params: p, Dims: map[string]int{"m": s[0], "k": s[1], "n": s[2]},
						Dist: dist, Seed: uint64(100*pi + si)})
				}
			}
		}
		cases += runCases(t, b, cs, nil)
	})

	t.Run("numerics", func(t *testing.T) {
		for _, num := range []tensor.Numerics{
			{Overflow: tensor.OverflowSaturate},
			{Subnormals: tensor.SubnormalFlush},
			{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush, Int8Rounding: tensor.RoundHalfAway},
		} {
			for _, dt := range []string{"fp16", "fp32", "bf16", "int8"} {
				for _, dist := range []string{ops.DistSpecial, ops.DistLarge, ops.DistNormal} {
					c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
						Dims: map[string]int{"n": 257}, Dist: dist, Seed: 7, Numerics: &num}
					runCase(t, b, c)
					cases++
				}
			}
			if _, err := ops.Lookup("gemm"); err == nil {
				for _, dist := range []string{ops.DistSpecial, ops.DistLarge} {
					c := ops.Case{Op: "gemm", Params: ops.Params{"beta": "1"},
						Dims: map[string]int{"m": 9, "k": 40, "n": 11}, Dist: dist, Seed: 8, Numerics: &num}
					runCase(t, b, c)
					cases++
				}
			}
		}
	})

	t.Run("golden_store", func(t *testing.T) {
		s := golden.Embedded().WithRecorder(emulator.Recorder())
		if len(s.Cases()) == 0 {
			t.Skip("the embedded golden store has no cases yet (make golden)")
		}
		results, err := golden.Check(context.Background(), s, b, golden.CheckOptions{NoBudgets: true})
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		for i := range results {
			r := &results[i]
			if !ckernel.Supports(r.Case) {
				continue
			}
			ran++
			cases++
			if !r.Pass() {
				t.Errorf("%s", r.Failure())
			}
		}
		t.Logf("embedded golden store: %d of %d cases in the C kernel's scope checked", ran, len(results))
	})

	if cases > 0 {
		t.Logf("%d cases through exec:ckernel in %s: %s per case (write inputs, run, read outputs, reference and bounds)",
			cases, time.Since(start).Round(time.Millisecond), (time.Since(start) / time.Duration(cases)).Round(time.Microsecond))
	}
}

// ---- the protocol ----

func TestSplitCommandLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`kernel`, []string{"kernel"}},
		{"  kernel \t--fast\n x ", []string{"kernel", "--fast", "x"}},
		{`./k 'a b' "c d"`, []string{"./k", "a b", "c d"}},
		{`a'b c'd`, []string{"ab cd"}},
		{`k '' ""`, []string{"k", "", ""}},
		{`k 'it'\''s'`, []string{"k", "it's"}},
		{`k "a \"q\" \\ \$x \n"`, []string{"k", `a "q" \ $x \n`}},
		{`k a\ b \'c`, []string{"k", "a b", "'c"}},
		{"k a\\\nb", []string{"k", "ab"}},
		{`k '$HOME' ~ *`, []string{"k", "$HOME", "~", "*"}},
		{`sh -c "./kernel --fast \"\$0\""`, []string{"sh", "-c", `./kernel --fast "$0"`}},
	} {
		got, err := backend.SplitCommandLine(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommandLine(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExecProtocol(t *testing.T) {
	save := t.TempDir()
	work := t.TempDir()
	// The script records its arguments, environment and the case directory,
	// then fails (so no outputs are needed).
	cmdline := script(t, `printf '%s\n' "$@" > `+quoteArg(filepath.Join(save, "args"))+`
printf '%s' "$NPUVERIFY_CASE" > `+quoteArg(filepath.Join(save, "env"))+`
cp "$NPUVERIFY_CASE" `+quoteArg(filepath.Join(save, "case.json"))+`
for dir; do :; done
ls "$dir" > `+quoteArg(filepath.Join(save, "ls"))+`
test -d "$dir/out" && test -f "$dir/x.npy" && test -f "$dir/y.npy" || exit 4
exit 1`) + ` --flag 'two words'`
	num := tensor.Numerics{Overflow: tensor.OverflowSaturate}
	c := faultCase
	c.Numerics = &num
	b := newExec(t, cmdline, backend.ExecOptions{WorkDir: work})
	if got, want := b.Name(), "exec:"+cmdline; got != want {
		t.Errorf("Name(): got %q, want %q", got, want)
	}
	_, err := harness.Run(context.Background(), b, c, harness.Options{})
	if err == nil || !harness.IsBackend(err) || !strings.Contains(err.Error(), "exited with status 1") {
		t.Fatalf("%s: got %v, want the script's exit status 1 (4 means the case directory was incomplete)", harness.Subject(c), err)
	}
	args, _ := os.ReadFile(filepath.Join(save, "args"))
	env, _ := os.ReadFile(filepath.Join(save, "env"))
	lines := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "--flag" || lines[1] != "two words" {
		t.Fatalf("%s: got arguments %q, want --flag, 'two words' and the case directory", harness.Subject(c), lines)
	}
	dir := lines[2]
	if !filepath.IsAbs(dir) || filepath.Dir(dir) != work || string(env) != filepath.Join(dir, "case.json") {
		t.Errorf("%s: got case directory %q and NPUVERIFY_CASE=%q, want an absolute directory under %s and its case.json", harness.Subject(c), dir, env, work)
	}
	if ls, _ := os.ReadFile(filepath.Join(save, "ls")); string(ls) != "case.json\nout\nx.npy\ny.npy\n" {
		t.Errorf("%s: got case directory listing %q, want case.json, out, x.npy, y.npy", harness.Subject(c), ls)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: got case directory %s still present (%v), want it removed", harness.Subject(c), dir, err)
	}
	raw, err := os.ReadFile(filepath.Join(save, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cf backend.ExecCaseFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("%s: case.json: %v\n%s", harness.Subject(c), err, raw)
	}
	want := backend.ExecCaseFile{
		Version: backend.ExecCaseVersion, Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Numerics: num,
		Inputs: []backend.ExecTensor{
			{Name: "x", File: "x.npy", DType: tensor.Float16, Shape: []int{17}},
			{Name: "y", File: "y.npy", DType: tensor.Float16, Shape: []int{17}},
		},
		Outputs: []backend.ExecTensor{{Name: "z", File: "out/z.npy", DType: tensor.Float16, Shape: []int{17}}},
	}
	if got, w := mustJSON(t, cf), mustJSON(t, want); got != w {
		t.Errorf("%s: got case.json\n%s\nwant\n%s", harness.Subject(c), got, w)
	}
	if !bytes.Contains(raw, []byte(`"overflow": "saturate"`)) || !bytes.Contains(raw, []byte(`"dtype": "fp16"`)) {
		t.Errorf("%s: got case.json\n%s\nwant numerics and dtypes by name", harness.Subject(c), raw)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExecGEMMCaseFileOmitsAbsentC(t *testing.T) {
	if _, err := ops.Lookup("gemm"); err != nil {
		t.Skipf("gemm: %v", err)
	}
	save := filepath.Join(t.TempDir(), "case.json")
	b := newExec(t, script(t, `cp "$NPUVERIFY_CASE" `+quoteArg(save)+`; exit 1`), backend.ExecOptions{})
	c := ops.Case{Op: "gemm", Params: ops.Params{"alpha": "0.5"}, Dims: map[string]int{"m": 2, "k": 3, "n": 4}, Dist: ops.DistUniform, Seed: 1}
	if _, err := harness.Run(context.Background(), b, c, harness.Options{}); !harness.IsBackend(err) {
		t.Fatalf("%s: got %v, want the script's backend error", harness.Subject(c), err)
	}
	raw, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	var cf backend.ExecCaseFile
	if err := json.Unmarshal(raw, &cf); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range cf.Inputs {
		names = append(names, in.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) || cf.Params["mode"] != "fp16_fp32acc" || cf.Params["alpha"] != "0.5" ||
		len(cf.Outputs) != 1 || cf.Outputs[0].File != "out/out.npy" || !slices.Equal(cf.Outputs[0].Shape, []int{2, 4}) {
		t.Errorf("%s: got case.json\n%s\nwant inputs a, b (no c), validated params, output out/out.npy [2 4]", harness.Subject(c), raw)
	}
}

func TestExecKeepAndTiming(t *testing.T) {
	work := t.TempDir()
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	ctx := context.Background()
	pc, err := harness.Prepare(faultCase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		timing  string // "" = no timing.json
		seconds float64
		noCost  bool
		wantErr string
	}{
		{timing: "", noCost: true},
		{timing: `{"kernel_ns": []}`, noCost: true},
		{timing: `{"kernel_ns": [300, 100, 200]}`, seconds: 200e-9},
		// The median of an even count is the mean of the middle two, of
		// the times in seconds.
		{timing: `{"kernel_ns": [400, 100, 200, 300]}`, seconds: (200e-9 + 300e-9) / 2},
		{timing: `{"kernel_ns": [1, `, wantErr: "out/timing.json"},
		{timing: `{"kernel_ns": [-5]}`, wantErr: "kernel_ns[0] = -5"},
		{timing: `{"kernel_seconds": [1]}`, wantErr: "unknown field"},
	} {
		body := `cp ` + fix + ` "$1/out/z.npy"`
		if tc.timing != "" {
			body += "\nprintf '%s' " + quoteArg(tc.timing) + ` > "$1/out/timing.json"`
		}
		b := newExec(t, script(t, body), backend.ExecOptions{WorkDir: work})
		out, cost, err := b.Run(ctx, "vector_add", pc.Params, pc.Inputs)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: timing.json %s: got error %v, want one containing %q", harness.Subject(faultCase), tc.timing, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: timing.json %s: got error %v, want none", harness.Subject(faultCase), tc.timing, err)
		case out["z"] == nil:
			t.Errorf("%s: got outputs %v, want z", harness.Subject(faultCase), out)
		case tc.noCost && cost != nil:
			t.Errorf("%s: timing.json %q: got cost %+v, want nil", harness.Subject(faultCase), tc.timing, cost)
		case !tc.noCost && cost == nil:
			t.Errorf("%s: timing.json %s: got no measurement, want kernel times", harness.Subject(faultCase), tc.timing)
		case !tc.noCost:
			if secs, ok := cost.Seconds(); !ok || secs != tc.seconds || cost.Model != nil || len(cost.Findings) != 0 {
				t.Errorf("%s: timing.json %s: got measurement %+v (seconds %g, %v), want kernel times only, median %g", harness.Subject(faultCase), tc.timing, cost, secs, ok, tc.seconds)
			}
		}
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("%s: got %d case directories left in WorkDir, want every one removed", harness.Subject(faultCase), len(ents))
	}

	// Keep leaves the directory and failures name it.
	b := newExec(t, script(t, `exit 5`), backend.ExecOptions{WorkDir: work, Keep: true})
	_, _, err = b.Run(ctx, "vector_add", pc.Params, pc.Inputs)
	ents, _ := os.ReadDir(work)
	if err == nil || len(ents) != 1 || !strings.Contains(err.Error(), "case directory kept: "+filepath.Join(work, ents[0].Name())) {
		t.Errorf("%s: Keep: got error %v and %d directories, want one kept directory named in the error", harness.Subject(faultCase), err, len(ents))
	}
}

func TestExecNumericsBackend(t *testing.T) {
	b := newExec(t, "true", backend.ExecOptions{})
	var nb harness.NumericsBackend = b
	num := tensor.Numerics{Subnormals: tensor.SubnormalFlush}
	c := nb.WithNumerics(num).(harness.NumericsBackend)
	if c.Numerics() != num || b.Numerics() != (tensor.Numerics{}) || c.Name() != b.Name() {
		t.Errorf("WithNumerics(%s): got %s (original %s), want a copy with the new profile and the original unchanged", num, c.Numerics(), b.Numerics())
	}
	if o := b.Options(); o.Timeout != backend.DefaultExecTimeout || o.MaxStderr != backend.DefaultExecMaxStderr {
		t.Errorf("NewExec defaults: got %+v, want timeout %s and stderr tail %d", o, backend.DefaultExecTimeout, backend.DefaultExecMaxStderr)
	}
}

// ---- how long one case takes ----

// BenchmarkExecVectorAdd measures one vector_add fp16 case through the
// exec backend and the C kernel: write case.json and the inputs, start the
// process, wait, read and check the output (the harness's reference and
// verification are not included).
func BenchmarkExecVectorAdd(b *testing.B) {
	bin := ckernel.Build(b)
	workDirs := []string{""} // the system's temporary directory
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		workDirs = append(workDirs, "/dev/shm")
	}
	for _, wd := range workDirs {
		e := newExec(b, quoteArg(bin), backend.ExecOptions{WorkDir: wd})
		for _, n := range []int{257, 16385, 1 << 20} {
			name := fmt.Sprintf("n=%d", n)
			if wd != "" {
				name += "/workdir=" + wd
			}
			benchExec(b, e, name, n)
		}
	}
}

func benchExec(b *testing.B, e *backend.Exec, name string, n int) {
	b.Run(name, func(b *testing.B) {
		pc, err := harness.Prepare(ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"},
			Dims: map[string]int{"n": n}, Dist: ops.DistNormal, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.SetBytes(int64(3 * 2 * n))
		for b.Loop() {
			if _, _, err := e.Run(ctx, "vector_add", pc.Params, pc.Inputs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
