package fuzz_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// fuzzOp is the one fuzz body every op's target runs: the op's seeds, its
// decoder, and the emulator judged by the harness under the default
// policy, so a fuzz input is held to exactly what a golden case is.
func fuzzOp(f *testing.F, name string) {
	info, err := opdb.Lookup(name)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range info.FuzzSeeds {
		f.Add(s)
	}
	paceWorker()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := onGrownStack(func() error { return judge(info, name, data) }); err != nil {
			t.Fatal(err)
		}
	})
}

// paceWorker sets the worker's share of the cores in a fuzzing worker
// process (the testing package's -test.fuzzworker), and nowhere else:
// plain test and benchmark runs, and the fuzzing coordinator, keep the
// defaults.
//
// The coordinator starts -test.parallel workers, by default one per core
// (GOMAXPROCS), and every worker is an exec loop on one goroutine (its
// launches serial, WithSerialLaunch). A worker left at GOMAXPROCS = the
// core count spins its idle Ps looking for work and runs its collector's
// workers on cores the other workers need: with GOMAXPROCS = cores /
// workers (1 by default) FuzzVectorAdd ran 14.6–16.7k execs/s against
// 11.9–12.6k with 2 workers on 2 cores, three alternated 20 s runs.
//
// The collector keeps its default percent. A worker's live heap is
// mostly the engine's own: its mutator holds a scratch buffer of about
// 100 MB for a []byte input (internal/fuzz, the shared memory's size,
// its pages mostly untouched), so the default already collects only
// every ~100 MB of garbage, a few thousand execs. A percent of 800 (set
// here until 2026-12-04, measured on benchmarks, which have no such
// buffer) let every worker grow to 840 MB resident (130–230 MB at the
// default), and was not faster: in three alternated 15 s runs each,
// 170–173k execs against 177k, 177k and one slow 108k at the default.
func paceWorker() {
	if fl := flag.Lookup("test.fuzzworker"); fl == nil || fl.Value.String() != "true" {
		return
	}
	workers := runtime.GOMAXPROCS(0) // -test.parallel's default
	if fl := flag.Lookup("test.parallel"); fl != nil {
		if n, err := strconv.Atoi(fl.Value.String()); err == nil && n > 0 {
			workers = n
		}
	}
	runtime.GOMAXPROCS(max(1, runtime.NumCPU()/workers))
}

// emulators caches one emulator per numerics profile: its device keeps
// its core memories pooled, so an exec reuses the last one's instead of
// allocating and clearing them again (the harness keeps an emulator whose
// numerics are the case's, Emulator.WithNumerics). A decoded kernel
// variant travels on the exec's context (kernels.WithVariant, which is
// all emulator.WithVariant does in Emulator.Run), not in the cache key: a
// fuzzer's mutations give nearly every exec a tiling no earlier one had,
// and an emulator per tiling would build a device, and pool its
// memories, for each of them.
var emulators sync.Map // tensor.Numerics → *emulator.Emulator

// emulatorFor returns the cached Ascend910B emulator under num.
func emulatorFor(num tensor.Numerics) *emulator.Emulator {
	if e, ok := emulators.Load(num); ok {
		return e.(*emulator.Emulator)
	}
	prof := npu.Ascend910B()
	prof.Numerics = num
	e, _ := emulators.LoadOrStore(num, emulator.New(prof))
	return e.(*emulator.Emulator)
}

// grown is the goroutine fuzz bodies run on: onGrownStack hands it one
// body at a time.
var grown struct {
	once sync.Once
	work chan grownCall
}

// grownCall is one body for grown's goroutine, and where its result goes.
type grownCall struct {
	f    func() error
	done chan<- grownResult
}

// grownResult is what a body on grown's goroutine returned, or the value
// it panicked with and the stack it panicked on.
type grownResult struct {
	err      error
	panicked bool
	value    any
	stack    []byte
}

// onGrownStack runs f on a goroutine that lives as long as the process
// and returns f's error; a panic in f panics the caller with f's value
// and f's stack, so the testing package reports it as it would have.
//
// The testing package runs every fuzz input on a new goroutine, which
// starts with a small stack: a body's deepest call chain (the harness,
// verify's block loops, whose frames hold their memos, and the emulator's
// launch) grew it on every exec, each growth copying the stack and
// adjusting every frame, 5% of a FuzzVectorAdd worker's samples
// (copystack, newstack). A goroutine that outlives the execs grows once.
// FuzzVectorAdd ran 323–355k execs in 20 s against 305–319k on the
// test's goroutine (2 workers, three alternated runs each).
func onGrownStack(f func() error) error {
	grown.once.Do(func() {
		grown.work = make(chan grownCall)
		go grownLoop()
	})
	done := make(chan grownResult, 1)
	grown.work <- grownCall{f, done}
	r := <-done
	if r.panicked {
		panic(fmt.Sprintf("%v\n\ngoroutine running the fuzz body:\n%s", r.value, r.stack))
	}
	return r.err
}

// grownLoop runs grown's bodies in turn.
func grownLoop() {
	for c := range grown.work {
		c.run()
	}
}

// run runs c's body and sends its result. A body that ends its goroutine
// (runtime.Goexit) is reported as a panic and a new loop takes over, so
// no caller waits for ever.
func (c grownCall) run() {
	returned := false
	defer func() {
		if returned {
			return
		}
		r := grownResult{panicked: true, value: recover(), stack: debug.Stack()}
		if r.value == nil {
			r.value = "fuzz body called runtime.Goexit"
			go grownLoop()
		}
		c.done <- r
	}()
	err := c.f()
	returned = true
	c.done <- grownResult{err: err}
}

// fuzzBody judges one fuzz input of op name on the caller's goroutine.
func fuzzBody(t testing.TB, info *opdb.Info, name string, data []byte) {
	if err := judge(info, name, data); err != nil {
		t.Fatal(err)
	}
}

// judge judges one fuzz input of op name: nil if the decoder rejects it
// or the emulator's outputs pass, else what failed.
func judge(info *opdb.Info, name string, data []byte) error {
	in, ok := info.FuzzDecode(data)
	if !ok {
		return nil
	}
	num := in.Numerics
	c := ops.Case{Name: "fuzz", Op: name, Params: in.Params, Numerics: &num}
	if err := ops.CheckInputs(info.Op, in.Params, in.Inputs); err != nil {
		return fmt.Errorf("%s: fuzz inputs break the contract: %w", harness.Subject(c), err)
	}
	// A fuzzing run keeps every host core busy with a worker process of
	// its own, so a launch's blocks run on the exec's goroutine: another
	// goroutine per launch would only add a wakeup and a handoff.
	ctx := npu.WithSerialLaunch(context.Background())
	if in.Variant != nil {
		ctx = kernels.WithVariant(ctx, *in.Variant)
	}
	pc := &harness.Prepared{Case: c, Op: info.Op, Params: in.Params, Inputs: in.Inputs}
	// The body reads the verdict, and the metrics only of a failure: an
	// output the bound accepts is judged without them.
	r, err := harness.RunPrepared(ctx, emulatorFor(num), pc, harness.Options{VerdictOnly: true})
	if err != nil {
		return fmt.Errorf("%s numerics=%s variant=%v: %w", harness.Subject(c), num, in.Variant, err)
	}
	if !r.Pass() {
		return fmt.Errorf("numerics=%s variant=%v\n%s", num, in.Variant, r.Verify.Failure())
	}
	return nil
}

// benchBodies runs the fuzz body of op name on ins in turn, one per
// iteration.
func benchBodies(b *testing.B, info *opdb.Info, name string, ins [][]byte) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fuzzBody(b, info, name, ins[i%len(ins)])
		i++
	}
}

// BenchmarkFuzzSeeds is the per-input cost of every op's fuzz target on
// its seeds, one sub-benchmark per op.
func BenchmarkFuzzSeeds(b *testing.B) {
	for _, name := range opdb.Names() {
		info, err := opdb.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) { benchBodies(b, info, name, info.FuzzSeeds) })
	}
}

// BenchmarkFuzzCorpus is the per-input cost of every op's fuzz target on
// the inputs its fuzzing kept on this machine (the go command's cache,
// $GOCACHE/fuzz/<this package>/<target>), one sub-benchmark per op: what
// a fuzzing worker runs, before its mutations, where the seeds are a few
// small cases. Coverage guidance keeps inputs the seeds do not look like:
// FuzzVectorAdd's kept many special values and short tiles, and the KV
// targets' seeds never showed that generating their caches took 40% of
// the body. A target with no cached corpus is skipped (fuzz it first).
// The corpus is the machine's own and grows, so compare two binaries on
// one machine in one session only.
func BenchmarkFuzzCorpus(b *testing.B) {
	for _, name := range opdb.Names() {
		info, err := opdb.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			ins, err := cachedCorpus(info.FuzzTarget)
			if err != nil {
				b.Skipf("%s: %v", info.FuzzTarget, err)
			}
			benchBodies(b, info, name, ins)
		})
	}
}

// cachedCorpus reads target's inputs from the go command's fuzz cache.
func cachedCorpus(target string) ([][]byte, error) {
	cache := os.Getenv("GOCACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, err
		}
		cache = filepath.Join(dir, "go-build")
	}
	// The go command files the corpus under the package's import path:
	// this test package's, without the _test of an external test.
	pkg := strings.TrimSuffix(reflect.TypeFor[corpusMarker]().PkgPath(), "_test")
	return readCorpus(filepath.Join(cache, "fuzz", pkg, target))
}

// corpusMarker is a type of this package, for its import path.
type corpusMarker struct{}

// readCorpus reads every corpus file in dir, each one []byte value in the
// go command's format ("go test fuzz v1", then []byte("…")).
func readCorpus(dir string) ([][]byte, error) {
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ins [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			return nil, err
		}
		header, value, _ := strings.Cut(string(raw), "\n")
		lit, ok := strings.CutPrefix(strings.TrimSpace(value), "[]byte(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		if header != "go test fuzz v1" || !ok || !ok2 {
			return nil, fmt.Errorf("%s: not one []byte value in the go command's corpus format", f.Name())
		}
		v, err := strconv.Unquote(lit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		ins = append(ins, []byte(v))
	}
	if len(ins) == 0 {
		return nil, fmt.Errorf("%s: no corpus files", dir)
	}
	return ins, nil
}

// BenchmarkFuzzVectorAddRandom is the per-input cost of FuzzVectorAdd on
// inputs spread over the decoder's whole range (n < 5000, 1–48 cores,
// tiles 0–4095, either overflow mode, 0–64 body bytes), a fresh input per
// exec, which is where a fuzzer's mutations take the seeds: nearly every
// exec has a tiling and length no earlier one had.
func BenchmarkFuzzVectorAddRandom(b *testing.B) {
	info, err := opdb.Lookup("vector_add")
	if err != nil {
		b.Fatal(err)
	}
	const seed = 1
	rng := rand.New(rand.NewPCG(seed, seed))
	buf := make([]byte, 7+64)
	b.ReportAllocs()
	for b.Loop() {
		in := buf[:7+rng.IntN(65)]
		for k := range in {
			in[k] = byte(rng.Uint32())
		}
		fuzzBody(b, info, "vector_add", in)
	}
}

// TestReadCorpus: readCorpus returns the bytes of corpus files written as
// the go command writes them (quoted with escapes, empty values
// included), and names a file in another format.
func TestReadCorpus(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{"a": {0, 0x3c, 0xff, '"', '\\', '\n'}, "b": {}}
	for name, v := range want {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readCorpus(dir)
	if err != nil {
		t.Fatalf("readCorpus(%s) = %v", dir, err)
	}
	if len(got) != 2 || !bytes.Equal(got[0], want["a"]) || !bytes.Equal(got[1], want["b"]) {
		t.Errorf("readCorpus(%s) = %q, want %q then %q", dir, got, want["a"], want["b"])
	}
	if err := os.WriteFile(filepath.Join(dir, "c"), []byte("go test fuzz v1\nint(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCorpus(dir); err == nil || !strings.Contains(err.Error(), "c: ") {
		t.Errorf("readCorpus of a dir holding an int value = %v, want an error naming file c", err)
	}
}

// TestOnGrownStack: onGrownStack runs every body on one goroutine other
// than the caller's, returns the body's error, and turns the body's panic
// or runtime.Goexit into the caller's panic, after which it still runs
// bodies.
func TestOnGrownStack(t *testing.T) {
	goroutine := func() string {
		buf := make([]byte, 64)
		head, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), " [")
		return head
	}
	var first, second string
	if err := onGrownStack(func() error { first = goroutine(); return nil }); err != nil {
		t.Fatalf("onGrownStack(nil body) = %v, want nil", err)
	}
	want := errors.New("body failed")
	if err := onGrownStack(func() error { second = goroutine(); return want }); err != want {
		t.Errorf("onGrownStack(failing body) = %v, want %v", err, want)
	}
	if first != second || first == goroutine() {
		t.Errorf("bodies ran on %q and %q, called from %q; want one goroutine, not the caller's", first, second, goroutine())
	}
	panics := func(f func() error) (msg string) {
		defer func() {
			if v := recover(); v != nil {
				msg = fmt.Sprint(v)
			}
		}()
		err := onGrownStack(f)
		return fmt.Sprintf("no panic (returned %v)", err)
	}
	if got := panics(func() error { panic("kernel bug") }); !strings.HasPrefix(got, "kernel bug\n") || !strings.Contains(got, "goroutine running the fuzz body") {
		t.Errorf("onGrownStack(panicking body) panicked with %q, want the body's value, then its stack", got)
	}
	if got := panics(func() error { runtime.Goexit(); return nil }); !strings.HasPrefix(got, "fuzz body called runtime.Goexit") {
		t.Errorf("onGrownStack(body calling runtime.Goexit) panicked with %q, want it named", got)
	}
	if err := onGrownStack(func() error { return want }); err != want {
		t.Errorf("onGrownStack after a Goexit = %v, want %v", err, want)
	}
}
