package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/backendtest"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// newWorker returns a Worker backend of cmdline, closed when the test ends.
func newWorker(tb testing.TB, cmdline string, opt backend.WorkerOptions) *backend.Worker {
	tb.Helper()
	w, err := backend.NewWorker(cmdline, opt)
	if err != nil {
		tb.Fatalf("NewWorker(%q): %v", cmdline, err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}

// workerScript writes a /bin/sh worker: setup runs once, at its start;
// body once per request, with $line the request and $dir its case_dir,
// and reply_ok answering it.
func workerScript(t *testing.T, setup, body string) string {
	t.Helper()
	return script(t, setup+`
reply_ok() { printf '{"case_dir":"%s","ok":true}\n' "$dir"; }
while IFS= read -r line; do
	dir=${line#*'"case_dir":"'}
	dir=${dir%%'"'*}
`+body+`
done`)
}

// wantWorkerError is wantBackendError, and checks that the message starts
// with the case's op, params and seed.
func wantWorkerError(t *testing.T, b backend.Backend, want ...string) string {
	t.Helper()
	msg := wantBackendError(t, b, want...)
	if subject := harness.Subject(faultCase).String(); !strings.HasPrefix(msg, subject+": backend worker:") {
		t.Errorf("got error\n%s\nwant it to start with %q (op, params and seed first)", msg, subject+": backend worker:")
	}
	return msg
}

// wantServed runs faultCase on b and checks that the worker served it: a
// result (its fixture output fails verification), not a backend error.
func wantServed(t *testing.T, b backend.Backend, what string) {
	t.Helper()
	if _, err := harness.Run(context.Background(), b, faultCase, harness.Options{}); err != nil {
		t.Errorf("%s: %s: got error %v, want the case served", harness.Subject(faultCase), what, err)
	}
}

// pids reads the pids a script appended to path, one a line.
func pids(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the workers' pids: %v", err)
	}
	return strings.Fields(string(b))
}

// TestWorkerCKernel runs the C kernel as a worker on the cases
// TestExecCKernel runs it on through exec: vector_add in every dtype at
// edge sizes and every distribution, gemm fp16_fp32acc over edge shapes
// and alpha/beta, numerics overrides (the same workers serve every
// profile: case.json carries it), and the default golden cases in the
// kernel's scope. The workers are reused: no more start than cases run
// at once, and closing their stdin lets every one exit 0.
func TestWorkerCKernel(t *testing.T) {
	bin := ckernel.Build(t)
	w := newWorker(t, quoteArg(bin), backend.WorkerOptions{ExecOptions: backend.ExecOptions{Timeout: 20 * time.Second}})
	var cs []ops.Case
	va, err := ops.Lookup("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []string{"fp16", "fp32", "bf16", "int8"} {
		for _, dist := range va.Dists() {
			for i, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257, 4095, 4097, 16385} {
				cs = append(cs, ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
					Dims: map[string]int{"n": n}, Dist: dist, Seed: uint64(1000 + i)})
			}
		}
	}
	gemm, err := ops.Lookup("gemm")
	if err != nil {
		t.Fatal(err)
	}
	for pi, p := range []ops.Params{{}, {"mode": "fp16_fp32acc", "alpha": "0.5", "beta": "1.5"},
		{"alpha": "-2", "beta": "-0.25", "accumulate": "blocked16"}, {"beta": "1"}} {
		dists := gemm.Dists()
		if pi > 0 {
			dists = []string{ops.DistUniform, ops.DistSpecial, ops.DistCancel}
		}
		for _, dist := range dists {
			for si, s := range [][3]int{{1, 1, 1}, {0, 4, 3}, {2, 0, 3}, {3, 5, 0}, {17, 33, 15}, {31, 64, 33}, {1, 1000, 1}, {64, 128, 32}} {
				cs = append(cs, ops.Case{Op: "gemm", Params: p, Dims: map[string]int{"m": s[0], "k": s[1], "n": s[2]},
					Dist: dist, Seed: uint64(100*pi + si)})
			}
		}
	}
	for _, num := range []tensor.Numerics{
		{Overflow: tensor.OverflowSaturate},
		{Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush, Int8Rounding: tensor.RoundHalfAway},
	} {
		for _, dt := range []string{"fp16", "bf16", "int8"} {
			for _, dist := range []string{ops.DistSpecial, ops.DistLarge} {
				cs = append(cs, ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
					Dims: map[string]int{"n": 257}, Dist: dist, Seed: 7, Numerics: &num})
			}
		}
		cs = append(cs, ops.Case{Op: "gemm", Params: ops.Params{"beta": "1"},
			Dims: map[string]int{"m": 9, "k": 40, "n": 11}, Dist: ops.DistSpecial, Seed: 8, Numerics: &num})
	}
	defaults := 0
	for _, c := range opdb.GoldenCases() {
		if ckernel.Supports(c) {
			cs = append(cs, c)
			defaults++
		}
	}
	start := time.Now()
	ran := runCases(t, w, cs, func(r *harness.Result, c ops.Case) {
		if r.Measurement == nil || len(r.Measurement.KernelSeconds) == 0 {
			t.Errorf("%s: got no measurement, want the kernel's timing.json", harness.Subject(c))
		}
	})
	t.Logf("%d cases (%d of them default golden cases) through worker:ckernel in %s", ran, defaults, time.Since(start).Round(time.Millisecond))
	results, err := golden.Check(context.Background(), golden.Embedded().WithRecorder(emulator.Recorder()), w, golden.CheckOptions{NoBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i := range results {
		if r := &results[i]; ckernel.Supports(r.Case) {
			checked++
			if !r.Pass() {
				t.Errorf("%s", r.Failure())
			}
		}
	}
	t.Logf("embedded golden store: %d of %d cases in the C kernel's scope checked", checked, len(results))
	if n, most := backend.WorkersStarted(w), max(2, runtime.GOMAXPROCS(0)); n < 1 || n > most {
		t.Errorf("got %d workers started for %d cases run %d at a time, want between 1 and %d", n, ran, most, most)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v, want every worker to exit 0 at the end of its stdin", err)
	}
	if _, err := harness.Run(context.Background(), w, faultCase, harness.Options{}); err == nil || !errors.Is(err, backend.ErrClosed) {
		t.Errorf("%s: Run after Close: got %v, want ErrClosed", harness.Subject(faultCase), err)
	}
}

// TestWorkerConformance: the C kernel as a worker passes the whole
// conformance suite in its scope, as it does behind exec (backendtest's
// TestCKernel): the golden cases, determinism serial and concurrent (its
// workers reused across both), the contract-exact properties, an unknown
// op and a cancelled context.
func TestWorkerConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every golden case through the C kernel, serially as well: skipped under -short")
	}
	w := newWorker(t, quoteArg(ckernel.Build(t)), backend.WorkerOptions{ExecOptions: backend.ExecOptions{Timeout: 20 * time.Second}})
	backendtest.TestBackend(t, w, backendtest.Ops(ckernel.Ops()...), backendtest.Cases(ckernel.Supports))
}

// TestWorkerProtocol: the worker is started once with NPUVERIFY_WORKER=1,
// no argument added and no NPUVERIFY_CASE; each case is one request line
// {"version":1,"case_dir":"<D>"} with D laid out as for exec under
// WorkDir, and removed after the reply; the next case goes to the same
// worker.
func TestWorkerProtocol(t *testing.T) {
	save := t.TempDir()
	work := t.TempDir()
	log := quoteArg(filepath.Join(save, "log"))
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	cmdline := workerScript(t, `printf 'start %s args=%s worker=%s case=%s id=%s\n' $$ "$#" "$NPUVERIFY_WORKER" "${NPUVERIFY_CASE-unset}" "${NPUVERIFY_WORKER_ID:+set}" >> `+log,
		`printf '%s\n' "$line" >> `+log+`
ls "$dir" | tr '\n' ' ' >> `+log+`
echo >> `+log+`
cp `+fix+` "$dir/out/z.npy"
reply_ok`) + " --flag 'two words'"
	w := newWorker(t, cmdline, backend.WorkerOptions{ExecOptions: backend.ExecOptions{WorkDir: work}})
	if got, want := w.Name(), "worker:"+cmdline; got != want {
		t.Errorf("Name(): got %q, want %q", got, want)
	}
	var dirs []string
	for range 2 {
		wantServed(t, w, "a worker that answers every request")
	}
	raw, err := os.ReadFile(filepath.Join(save, "log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "start ") || !strings.HasSuffix(lines[0], " args=2 worker=1 case=unset id=set") {
		t.Fatalf("got the worker's log\n%s\nwant one start (args --flag and 'two words' only, NPUVERIFY_WORKER=1, NPUVERIFY_WORKER_ID set, no NPUVERIFY_CASE) and two requests", raw)
	}
	for i := 1; i < len(lines); i += 2 {
		var req backend.WorkerRequest
		if err := json.Unmarshal([]byte(lines[i]), &req); err != nil {
			t.Fatalf("request %q: %v", lines[i], err)
		}
		if want, _ := json.Marshal(backend.WorkerRequest{Version: 1, CaseDir: req.CaseDir}); lines[i] != string(want) {
			t.Errorf("got request %q, want %q", lines[i], want)
		}
		if !filepath.IsAbs(req.CaseDir) || filepath.Dir(req.CaseDir) != work {
			t.Errorf("got case_dir %q, want an absolute directory under %s", req.CaseDir, work)
		}
		if lines[i+1] != "case.json out x.npy y.npy " {
			t.Errorf("got case directory listing %q, want case.json, out, x.npy, y.npy", lines[i+1])
		}
		dirs = append(dirs, req.CaseDir)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("got case_dir %s twice, want a fresh directory per case", dirs[0])
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("got %d case directories left in WorkDir, want every one removed", len(ents))
	}
}

// TestWorkerHangKilledNextCaseServed: a worker that never replies is
// killed with its process group at the timeout, and the next case gets a
// fresh worker.
func TestWorkerHangKilledNextCaseServed(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	w := newWorker(t, workerScript(t, `echo $$ >> `+quoteArg(started),
		`if [ ! -e `+quoteArg(filepath.Join(dir, "hung"))+` ]; then
	touch `+quoteArg(filepath.Join(dir, "hung"))+`
	echo "stuck in the kernel" >&2
	sleep 1000
fi
cp `+fix+` "$dir/out/z.npy"
reply_ok`), backend.WorkerOptions{ExecOptions: backend.ExecOptions{Timeout: time.Second}})
	begin := time.Now()
	wantWorkerError(t, w, "timed out after 1s without replying; killed it with its processes (a fresh worker serves the next case)",
		"stderr during the case (20 bytes):\n  | stuck in the kernel")
	if d := time.Since(begin); d > 6*time.Second {
		t.Errorf("the hung case took %s, want about the 1s timeout", d)
	}
	hung := pids(t, started)
	wantServed(t, w, "the case after a hung one")
	got := pids(t, started)
	if len(got) != 2 || got[0] == got[1] {
		t.Errorf("got workers %v started, want a second, fresh one for the case after the hang", got)
	}
	if pid, err := strconv.Atoi(hung[0]); len(hung) == 1 && (err != nil || !processGone(pid)) {
		t.Errorf("got the hung worker %s still running, want it killed", hung[0])
	}
}

// TestWorkerFaults: each way a worker can break the protocol is a backend
// failure of the case, naming what the worker wrote, quoted and capped.
func TestWorkerFaults(t *testing.T) {
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"exit mid-case", `echo "segfault, say" >&2; exit 3`,
			[]string{"closed its stdout (EOF) before replying: it exited with status 3; killed it with its processes", "  | segfault, say"}},
		{"non-JSON line", `echo "loss=0.25 step 3"`,
			[]string{`protocol error: its stdout line "loss=0.25 step 3" is not a reply (invalid character 'l'`, "stdout carries replies only, logs go to stderr"}},
		{"reply for another case", `printf '{"case_dir":"/tmp/other","ok":true}\n'`,
			[]string{`protocol error: its reply "{\"case_dir\":\"/tmp/other\",\"ok\":true}" is for another case (want case_dir "`}},
		{"reply without ok", `printf '{"case_dir":"%s"}\n' "$dir"`, []string{`is not a reply (no "ok")`}},
		{"control characters", `printf 'x\033[2J\r\n'`, []string{`its stdout line "x\x1b[2J\r" is not a reply`}},
		{"huge line", `head -c 100000 /dev/zero | tr '\0' y; echo`,
			[]string{"protocol error: a line of its stdout is longer than 64 KiB: \"yyyy", "yyy\"… (the first 256 bytes shown)"}},
		{"no newline", `printf '{"case_dir":"%s","ok":true}' "$dir"; exit 0`,
			[]string{"with no newline and closed its stdout (EOF) before replying: it exited with status 0"}},
		{"ok false", `cp ` + fix + ` "$dir/out/z.npy"; echo "ckernel: details" >&2; printf '{"case_dir":"%s","ok":false,"error":"no gemm on this device\\u001b[31m"}\n' "$dir"`,
			[]string{`replied "ok": false: no gemm on this device\x1b[31m`, "stderr during the case (17 bytes):\n  | ckernel: details"}},
		{"ok false, lines", `printf '{"case_dir":"%s","ok":false,"error":"line one\\nline two"}\n' "$dir"`,
			[]string{"replied \"ok\": false:\n  | line one\n  | line two"}},
		{"ok false, no text", `printf '{"case_dir":"%s","ok":false}\n' "$dir"`, []string{`replied "ok": false: (no error text)`}},
		{"ok, no output", `reply_ok`, []string{`output "z": out/z.npy was not written (want fp16[17])`}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			w := newWorker(t, workerScript(t, "", tc.body), backend.WorkerOptions{ExecOptions: backend.ExecOptions{Timeout: 10 * time.Second}})
			msg := wantWorkerError(t, w, tc.want...)
			t.Logf("the failure as reported:\n%s", msg)
			if strings.ContainsAny(msg, "\r\x1b") {
				t.Errorf("got a raw control character in the error %q, want every one escaped", msg)
			}
			if len(msg) > 8<<10 {
				t.Errorf("got a %d-byte error, want it capped", len(msg))
			}
		})
	}
}

// TestWorkerFailureKeepsOrReplacesWorker: a reply "ok": false fails the
// case and the same worker serves the next; a protocol error kills the
// worker and a fresh one serves the next.
func TestWorkerFailureKeepsOrReplacesWorker(t *testing.T) {
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	for _, tc := range []struct {
		first string // what the worker does with its first case
		fresh bool   // whether the next case needs a fresh worker
		twice bool   // the first case is answered twice
	}{
		{first: `printf '{"case_dir":"%s","ok":false,"error":"unsupported"}\n' "$dir"`},
		{first: `echo garbage`, fresh: true},
		// The second reply to one case answers nothing the next case asks.
		{first: `reply_ok; reply_ok`, fresh: true, twice: true},
	} {
		started := filepath.Join(t.TempDir(), "started")
		seen := filepath.Join(t.TempDir(), "seen")
		w := newWorker(t, workerScript(t, `echo $$ >> `+quoteArg(started),
			`if [ ! -e `+quoteArg(seen)+` ]; then
	touch `+quoteArg(seen)+`
	cp `+fix+` "$dir/out/z.npy"
	`+tc.first+`
	continue
fi
cp `+fix+` "$dir/out/z.npy"
reply_ok`), backend.WorkerOptions{})
		if tc.twice {
			wantServed(t, w, "the case answered twice")
			// Whether the second reply is read before the next request
			// is sent or after, it is no reply to that request.
			wantWorkerError(t, w, `protocol error: it`, `"{\"case_dir\":`, "; killed it")
		} else {
			wantWorkerError(t, w)
		}
		wantServed(t, w, "the case after "+tc.first)
		if got := pids(t, started); len(got) != map[bool]int{false: 1, true: 2}[tc.fresh] {
			t.Errorf("worker that %s: got workers %v started, want a fresh one: %v", tc.first, got, tc.fresh)
		}
	}
}

// TestWorkerContainsGrandchild: a worker's setsid grandchild leaves its
// process group; it is killed with the worker when the worker dies
// mid-case, and when Close retires a healthy worker.
func TestWorkerContainsGrandchild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("descendants that leave the process group are followed on Linux only")
	}
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	for _, tc := range []struct{ name, body string }{
		{"dies mid-case", `setsid sleep 1000 & echo $! > "$PIDFILE"; exit 1`},
		{"retired by Close", `setsid sleep 1000 & echo $! > "$PIDFILE"; cp ` + fix + ` "$dir/out/z.npy"; reply_ok`},
	} {
		pf := pidFile(t)
		w := newWorker(t, workerScript(t, "", tc.body), backend.WorkerOptions{})
		if tc.name == "dies mid-case" {
			wantWorkerError(t, w, "exited with status 1")
		} else {
			wantServed(t, w, "a worker that leaves a grandchild")
			w.Close()
		}
		wantNoSurvivor(t, readPID(t, pf), "the worker's setsid grandchild ("+tc.name+")")
	}
}

// TestWorkerInputsReadOnly: the C kernel as a worker with its clobber
// fault writes its result over input x: the outputs are judged and
// inputs-unchanged fails, naming x.
func TestWorkerInputsReadOnly(t *testing.T) {
	ck := ckernel.Build(t)
	w := newWorker(t, "env "+ckernel.FaultEnv+"=clobber "+quoteArg(ck), backend.WorkerOptions{})
	r, err := harness.Run(context.Background(), w, faultCase, harness.Options{})
	if err != nil {
		t.Fatalf("%s: %v", harness.Subject(faultCase), err)
	}
	msg := ""
	if !r.Pass() {
		msg = r.Verify.Failure()
	}
	if !strings.Contains(msg, harness.CheckInputsUnchanged) || !strings.Contains(msg, `input "x"`) || !strings.Contains(msg, "x.npy was written") {
		t.Errorf("%s: got failure %q, want %s naming input \"x\"", harness.Subject(faultCase), msg, harness.CheckInputsUnchanged)
	}
}

// TestWorkerMegabytesOfStderr: 20 MB on stderr during a case is kept as a
// bounded tail, and its last lines are quoted.
func TestWorkerMegabytesOfStderr(t *testing.T) {
	w := newWorker(t, workerScript(t, "", `head -c 20000000 /dev/zero | tr '\0' x >&2; echo >&2; echo "the real error" >&2
printf '{"case_dir":"%s","ok":false,"error":"see stderr"}\n' "$dir"`), backend.WorkerOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg := wantWorkerError(t, w, `replied "ok": false: see stderr`, "stderr during the case (20000016 bytes, last", "the real error")
	runtime.ReadMemStats(&after)
	if len(msg) > 8<<10 {
		t.Errorf("got a %d-byte error message, want the stderr quote bounded (≤ 8 KiB)", len(msg))
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Errorf("got %d bytes allocated while capturing 20 MB of stderr, want bounded capture (< 8 MiB)", d)
	}
}

// TestWorkerCloseAndCancel: Close kills a worker in the middle of a case
// (the Run fails with ErrClosed), kills an idle worker that does not exit
// when its stdin closes (and says so), and a canceled context kills the
// worker serving it.
func TestWorkerCloseAndCancel(t *testing.T) {
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	got := filepath.Join(t.TempDir(), "got")
	hang := newWorker(t, workerScript(t, "", `touch `+quoteArg(got)+`; sleep 1000`), backend.WorkerOptions{})
	errc := make(chan error, 1)
	go func() {
		_, err := harness.Run(context.Background(), hang, faultCase, harness.Options{})
		errc <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(got); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the worker did not get the case within 10s", harness.Subject(faultCase))
		}
	}
	hang.Close()
	select {
	case err := <-errc:
		if err == nil || !errors.Is(err, backend.ErrClosed) || !strings.Contains(err.Error(), "killed it") {
			t.Errorf("%s: Run during Close: got %v, want a killed worker and ErrClosed", harness.Subject(faultCase), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Run still running 10s after Close", harness.Subject(faultCase))
	}

	deaf := newWorker(t, script(t, `read line
dir=${line#*'"case_dir":"'}; dir=${dir%%'"'*}
cp `+fix+` "$dir/out/z.npy"
printf '{"case_dir":"%s","ok":true}\n' "$dir"
exec sleep 1000`), backend.WorkerOptions{})
	wantServed(t, deaf, "a worker that ignores the end of its stdin")
	if err := deaf.Close(); err == nil || !strings.Contains(err.Error(), "still running 2s after its stdin was closed; killed it") {
		t.Errorf("Close of a worker that ignores its stdin's end: got %v, want it named and killed", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	slow := newWorker(t, workerScript(t, "", `sleep 1000`), backend.WorkerOptions{})
	wantBackendErrorCtx(t, ctx, slow, "(the caller's deadline) without replying; killed it")
}

// TestWorkerPool: Slots caps the workers (and so the cases served at
// once); without it the pool grows with the callers' concurrency and
// reuses its workers; WithNumerics copies share them.
func TestWorkerPool(t *testing.T) {
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	body := `sleep 0.05; cp ` + fix + ` "$dir/out/z.npy"; reply_ok`
	for _, tc := range []struct{ slots, most int }{{1, 1}, {0, 4}} {
		w := newWorker(t, workerScript(t, "", body), backend.WorkerOptions{Slots: tc.slots})
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b backend.Backend = w
				if i%2 == 1 {
					b = w.WithNumerics(tensor.Numerics{Subnormals: tensor.SubnormalFlush})
				}
				wantServed(t, b, "one of 12 cases run 4 at a time")
			}()
			if i%4 == 3 {
				wg.Wait()
			}
		}
		if n := backend.WorkersStarted(w); n < 1 || n > tc.most {
			t.Errorf("Slots %d: got %d workers started for 12 cases run 4 at a time, want 1 to %d", tc.slots, n, tc.most)
		}
	}
	if _, err := backend.NewWorker("'oops", backend.WorkerOptions{}); !errors.Is(err, backend.ErrCommandLine) {
		t.Errorf("NewWorker('oops): got %v, want ErrCommandLine", err)
	}
	wantWorkerError(t, newWorker(t, "/nonexistent/dir/ckernel", backend.WorkerOptions{}), "starting command", "/nonexistent/dir/ckernel")
	w := newWorker(t, "true", backend.WorkerOptions{})
	var nb harness.NumericsBackend = w
	num := tensor.Numerics{Subnormals: tensor.SubnormalFlush}
	if c := nb.WithNumerics(num).(harness.NumericsBackend); c.Numerics() != num || w.Numerics() != (tensor.Numerics{}) || c.Name() != w.Name() {
		t.Errorf("WithNumerics(%s): got %s (original %s), want a copy with the new profile", num, c.Numerics(), w.Numerics())
	}
	if o := w.Options(); o.Timeout != backend.DefaultExecTimeout || o.MaxStderr != backend.DefaultExecMaxStderr || !slices.Equal(w.Args(), []string{"true"}) {
		t.Errorf("NewWorker defaults: got %+v, want timeout %s and stderr tail %d", o, backend.DefaultExecTimeout, backend.DefaultExecMaxStderr)
	}
}

// BenchmarkWorkerVsExec measures one case through the C kernel under
// exec: (a process per case) and worker: (one process kept running, warm
// before the clock starts): lay out the case directory, run the kernel,
// read the outputs back and re-hash the inputs (the harness's reference
// and judging are not included). Compare with
// benchstat -col /backend.
func BenchmarkWorkerVsExec(b *testing.B) {
	bin := ckernel.Build(b)
	cases := []ops.Case{
		{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 257}, Dist: ops.DistNormal, Seed: 1},
		{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 16385}, Dist: ops.DistNormal, Seed: 1},
		{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 1 << 20}, Dist: ops.DistNormal, Seed: 1},
		{Op: "gemm", Params: ops.Params{}, Dims: map[string]int{"m": 64, "k": 128, "n": 32}, Dist: ops.DistNormal, Seed: 1},
	}
	backends := []struct {
		name string
		b    backend.Backend
	}{
		{"exec", newExec(b, quoteArg(bin), backend.ExecOptions{})},
		{"worker", newWorker(b, quoteArg(bin), backend.WorkerOptions{})},
	}
	ctx := context.Background()
	for _, c := range cases {
		pc, err := harness.Prepare(c)
		if err != nil {
			b.Fatal(err)
		}
		size := ""
		for _, d := range []string{"m", "k", "n"} {
			if v, ok := c.Dims[d]; ok {
				size += fmt.Sprintf("%s%d", d, v)
			}
		}
		for _, be := range backends {
			b.Run(fmt.Sprintf("op=%s/size=%s/backend=%s", c.Op, size, be.name), func(b *testing.B) {
				if _, _, err := be.b.Run(ctx, c.Op, pc.Params, pc.Inputs); err != nil { // a worker started
					b.Fatal(err)
				}
				for b.Loop() {
					if _, _, err := be.b.Run(ctx, c.Op, pc.Params, pc.Inputs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
