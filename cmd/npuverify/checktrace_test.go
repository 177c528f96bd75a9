package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"testing"
)

// chromeEvent is one event of a Chrome trace file, every field the
// format's readers (Perfetto, chrome://tracing) rely on, as pointers so
// that a missing one is told from a zero.
type chromeEvent struct {
	Name *string        `json:"name"`
	Ph   *string        `json:"ph"`
	Ts   *float64       `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  *int           `json:"pid"`
	Tid  *int           `json:"tid"`
	ID   *int           `json:"id"`
	Args map[string]any `json:"args"`
}

// checkChromeTrace parses a trace file and holds it to the Chrome trace
// event format and to the schedule's invariants: every event has name,
// ph, ts, pid and tid; a span ("X") has dur ≥ 0 and its cycles in args;
// no two spans of one track (core × pipe) overlap; every flow has its
// start ("s") and its finish ("f"), and the finish is no earlier than the
// start, in cycles and in microseconds. It returns the spans and flows.
func checkChromeTrace(data []byte) (spans, flows int, err error) {
	var tf struct {
		TraceEvents []chromeEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tf); err != nil {
		return 0, 0, fmt.Errorf("not JSON: %w", err)
	}
	if tf.TraceEvents == nil {
		return 0, 0, fmt.Errorf("no traceEvents array")
	}
	type span struct{ start, end int64 }
	tracks := map[[2]int][]span{}
	type point struct {
		cycle int64
		ts    float64
	}
	starts, finishes := map[int]point{}, map[int]point{}
	for i, e := range tf.TraceEvents {
		if e.Name == nil || e.Ph == nil || e.Pid == nil || e.Tid == nil || (*e.Ph != "M" && e.Ts == nil) {
			return 0, 0, fmt.Errorf("event %d lacks name, ph, ts, pid or tid: %+v", i, e)
		}
		cyc := func(k string) (int64, error) {
			v, ok := e.Args[k].(float64)
			if !ok {
				return 0, fmt.Errorf("event %d (%s %s): args.%s missing", i, *e.Ph, *e.Name, k)
			}
			return int64(v), nil
		}
		switch *e.Ph {
		case "M":
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				return 0, 0, fmt.Errorf("span %d (%s): dur %v", i, *e.Name, e.Dur)
			}
			s, err := cyc("start")
			if err != nil {
				return 0, 0, err
			}
			end, err := cyc("end")
			if err != nil {
				return 0, 0, err
			}
			if end < s {
				return 0, 0, fmt.Errorf("span %d (%s): ends at cycle %d before it starts at %d", i, *e.Name, end, s)
			}
			k := [2]int{*e.Pid, *e.Tid}
			tracks[k] = append(tracks[k], span{s, end})
			spans++
		case "s", "f":
			if e.ID == nil {
				return 0, 0, fmt.Errorf("flow event %d has no id", i)
			}
			c, err := cyc("cycle")
			if err != nil {
				return 0, 0, err
			}
			m := starts
			if *e.Ph == "f" {
				m = finishes
				flows++
			}
			if _, dup := m[*e.ID]; dup {
				return 0, 0, fmt.Errorf("flow %d: two %q events", *e.ID, *e.Ph)
			}
			m[*e.ID] = point{c, *e.Ts}
		default:
			return 0, 0, fmt.Errorf("event %d: phase %q", i, *e.Ph)
		}
	}
	for k, ss := range tracks {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				return 0, 0, fmt.Errorf("core %d pipe %d: span [%d, %d) overlaps [%d, %d)", k[0], k[1], ss[i].start, ss[i].end, ss[i-1].start, ss[i-1].end)
			}
		}
	}
	if len(starts) != len(finishes) {
		return 0, 0, fmt.Errorf("%d flow starts, %d finishes", len(starts), len(finishes))
	}
	for id, f := range finishes {
		s, ok := starts[id]
		if !ok || f.cycle < s.cycle || f.ts < s.ts {
			return 0, 0, fmt.Errorf("flow %d: finish at cycle %d (ts %g), start at %d (ts %g, found %v)", id, f.cycle, f.ts, s.cycle, s.ts, ok)
		}
	}
	return spans, flows, nil
}

// traceFiles returns dir's files by path relative to dir, with contents.
func traceFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckTraceWritesOnePerCase: check --trace DIR (DIR missing, so made)
// writes exactly one Chrome trace per case run, named <op>/<case>.json,
// each valid (checkChromeTrace) with spans, and the queue-pipelined kernel
// with flows; the files do not depend on --jobs; a shard writes only its
// own cases' traces; --repeat traces once.
func TestCheckTraceWritesOnePerCase(t *testing.T) {
	const run = `^(kv_update/paged_fp16_normal_d5|sparse24_prune/special_16x64|gemm/fp16_fp32acc_uniform_33x47x17_sequential|vector_add/fp16_uniform_n17)$`
	want := []string{"gemm/fp16_fp32acc_uniform_33x47x17_sequential.json", "kv_update/paged_fp16_normal_d5.json", "sparse24_prune/special_16x64.json", "vector_add/fp16_uniform_n17.json"}
	dir := t.TempDir()
	a := filepath.Join(dir, "a", "made")
	out, _ := wantCLI(t, 0, []string{"traces: 4 written to " + a}, "check", "--run", run, "--trace", a, "--jobs", "2")
	files := traceFiles(t, a)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		t.Fatalf("check --run %s --trace: wrote %q want %q\n%s", run, got, want, out)
	}
	for name, b := range files {
		spans, flows, err := checkChromeTrace(b)
		if err != nil {
			t.Errorf("check --trace: %s: %v", name, err)
			continue
		}
		if spans == 0 {
			t.Errorf("check --trace: %s: no span", name)
		}
		if name == "kv_update/paged_fp16_normal_d5.json" && flows == 0 {
			t.Errorf("check --trace: %s: %d spans and no flow; its queues hand tiles from pipe to pipe", name, spans)
		}
	}
	// One job at a time, and the same cases again under --repeat: the
	// same bytes (traces are deterministic, and a repeated case is traced
	// once).
	b := filepath.Join(dir, "b")
	wantCLI(t, 0, []string{"traces: 4 written"}, "check", "--run", run, "--trace", b, "--jobs", "1", "--repeat", "2")
	again := traceFiles(t, b)
	for name, data := range files {
		if !bytes.Equal(again[name], data) {
			t.Errorf("check --trace: %s differs between --jobs 2 and --jobs 1 --repeat 2", name)
		}
	}
	// Shard 2 of 2 of the four sorted cases: the 2nd and the 4th.
	c := filepath.Join(dir, "c")
	wantCLI(t, 0, []string{"traces: 2 written"}, "check", "--run", run, "--trace", c, "--shard", "2/2")
	shard := traceFiles(t, c)
	if len(shard) != 2 || shard[want[1]] == nil || shard[want[3]] == nil {
		t.Errorf("check --shard 2/2 --trace: wrote %d files, want %s and %s", len(shard), want[1], want[3])
	}
}

// TestTraceFileNames: a case's trace file is DIR/<op>/<case>.json, with
// every byte a file name should not hold escaped, so two names never
// share a file and none escapes DIR or hides.
func TestTraceFileNames(t *testing.T) {
	for id, want := range map[string]string{
		"gemm/fp16_64x64x64":   "D/gemm/fp16_64x64x64.json",
		"vector_add/a b":       "D/vector_add/a%20b.json",
		"vector_add/a%20b":     "D/vector_add/a%2520b.json",
		"vector_add/.x":        "D/vector_add/%2Ex.json",
		"vector_add/x\n:*?\\y": "D/vector_add/x%0A%3A%2A%3F%5Cy.json",
		"op/ünï":               "D/op/%C3%BCn%C3%AF.json",
	} {
		if got := filepath.ToSlash(traceFileName("D", id)); got != want {
			t.Errorf("traceFileName(D, %q) = %q, want %q", id, got, want)
		}
	}
}

// TestCheckTraceUnwritableDir: a --trace DIR that takes no file is an
// input error found before the first case. Root writes into a 0555
// directory, so there the directory is one sysfs refuses to make.
func TestCheckTraceUnwritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		if runtime.GOOS != "linux" {
			t.Skip("running as root, and no sysfs to refuse a directory")
		}
		dir = "/sys/npuverify-trace"
	}
	wantCLI(t, 2, []string{"npuverify: check: --trace " + dir + ": "}, "check", "--run", "^vector_add/fp16_uniform_n17$", "--trace", dir)
}

// TestCheckChromeTraceRejects: the checker the tests above rely on finds
// what it is for (so a broken trace cannot pass them unseen).
func TestCheckChromeTraceRejects(t *testing.T) {
	meta := `{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"MTE2"}}`
	span := func(s, e int) string {
		return fmt.Sprintf(`{"name":"DataCopy","ph":"X","ts":%d,"dur":%d,"pid":0,"tid":0,"args":{"start":%d,"end":%d}}`, s, e-s, s, e)
	}
	flow := func(ph string, c int) string {
		return fmt.Sprintf(`{"name":"event","ph":%q,"ts":%d,"pid":0,"tid":0,"id":1,"args":{"cycle":%d}}`, ph, c, c)
	}
	file := func(evs ...string) []byte {
		s := `{"traceEvents":[`
		for i, e := range evs {
			if i > 0 {
				s += ","
			}
			s += e
		}
		return []byte(s + `]}`)
	}
	if _, _, err := checkChromeTrace(file(meta, span(0, 10), span(10, 20), flow("s", 5), flow("f", 12))); err != nil {
		t.Fatalf("a valid trace: %v", err)
	}
	for what, data := range map[string][]byte{
		"overlap in a pipe":        file(meta, span(0, 10), span(9, 20)),
		"flow finish before start": file(span(0, 10), flow("s", 12), flow("f", 5)),
		"flow without start":       file(span(0, 10), flow("f", 5)),
		"span without ts":          file(`{"name":"x","ph":"X","dur":1,"pid":0,"tid":0,"args":{"start":0,"end":1}}`),
		"span without dur":         file(`{"name":"x","ph":"X","ts":0,"pid":0,"tid":0,"args":{"start":0,"end":1}}`),
		"not JSON":                 []byte(`{"traceEvents":[`),
		"no events":                []byte(`{}`),
	} {
		if _, _, err := checkChromeTrace(data); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}
