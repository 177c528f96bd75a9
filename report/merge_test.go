package report

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// shardFile is one result file for TestMerge: its meta and case IDs.
func shardFile(meta map[string]string, ids ...string) *Results {
	r := &Results{Meta: meta}
	for _, id := range ids {
		r.Cases = append(r.Cases, Case{ID: id, Op: "vector_add", Verdict: "pass"})
	}
	return r
}

// TestMerge: Merge states which shards of which run it joined, refuses a
// missing shard, a run cut short, a shard of another run and an empty
// result, and renders a partial set only when asked, marked partial.
func TestMerge(t *testing.T) {
	base := map[string]string{"backend": "emulator", "profile": "ascend910b", "store": "s"}
	meta := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	s1 := shardFile(meta(MetaShard, "1/3", MetaRun, "r1", MetaRunCases, "4"), "a/1", "a/4")
	s2 := shardFile(meta(MetaShard, "2/3", MetaRun, "r1", MetaRunCases, "4"), "a/2")
	s3 := shardFile(meta(MetaShard, "3/3", MetaRun, "r1", MetaRunCases, "4"), "a/3")
	for _, c := range []struct {
		name    string
		rs      []*Results
		partial bool
		wantErr error  // nil: merges
		want    string // in the error, or in Merged.String()
	}{
		{"complete", []*Results{s3, s1, s2}, false, nil, "shards 1/3, 2/3, 3/3 of run r1, 4 of 4 cases"},
		{"shard 1 of 3 alone", []*Results{s1}, false, ErrIncomplete, "missing shard(s) 2/3, 3/3"},
		{"shard 1 of 3, allowed", []*Results{s1}, true, nil, "missing shard(s) 2/3, 3/3"},
		{"another run", []*Results{s1, shardFile(meta(MetaShard, "2/3", MetaRun, "r2", MetaRunCases, "4"), "a/2")}, false, nil, "another run"},
		{"another shard count", []*Results{s1, shardFile(meta(MetaShard, "2/2", MetaRun, "r1", MetaRunCases, "4"), "a/2")}, false, nil, "of 3 shards"},
		{"same shard twice", []*Results{s1, shardFile(meta(MetaShard, "1/3", MetaRun, "r1", MetaRunCases, "4"), "a/7")}, false, nil, "shard 1/3 is also"},
		{"bad shard", []*Results{shardFile(meta(MetaShard, "4/3", MetaRun, "r1"), "a/1")}, false, nil, "want I/N"},
		{"interrupted", []*Results{s1, s2, shardFile(meta(MetaShard, "3/3", MetaRun, "r1", MetaRunCases, "4", MetaInterrupted, "SIGTERM after 0 cases"), "a/3")}, false, ErrIncomplete, "interrupted"},
		{"fewer cases than the run", []*Results{s1, s2, shardFile(meta(MetaShard, "3/3", MetaRun, "r1", MetaRunCases, "4"))}, false, ErrIncomplete, "3 of 4 cases"},
		{"empty", []*Results{shardFile(nil)}, true, ErrEmpty, "not a pass"},
		{"older files", []*Results{shardFile(meta(), "a/1"), shardFile(meta(), "a/2")}, false, nil, "2 file(s) record no shard"},
	} {
		names := make([]string, len(c.rs))
		for i := range names {
			names[i] = filepath.Join("d", string(rune('a'+i))+".json")
		}
		out, info, err := Merge(c.rs, names, c.partial)
		ok := c.wantErr == nil && !strings.Contains(c.name, "another") && !strings.Contains(c.name, "twice") && !strings.Contains(c.name, "bad")
		switch {
		case ok && err != nil:
			t.Errorf("Merge %s (allowPartial %v): got error %v, want none", c.name, c.partial, err)
		case ok && !strings.Contains(info.String(), c.want):
			t.Errorf("Merge %s (allowPartial %v): got %q, want it to contain %q", c.name, c.partial, info, c.want)
		case !ok && (err == nil || !strings.Contains(err.Error(), c.want) || (c.wantErr != nil && !errors.Is(err, c.wantErr))):
			t.Errorf("Merge %s (allowPartial %v): got error %v, want one containing %q (wrapping %v)", c.name, c.partial, err, c.want, c.wantErr)
		}
		if err != nil {
			continue
		}
		for _, k := range []string{MetaShard, MetaRun, MetaRunCases, MetaInterrupted} {
			if _, ok := out.Meta[k]; ok {
				t.Errorf("Merge %s: merged meta keeps the per-file key %q: %v", c.name, k, out.Meta)
			}
		}
		if _, partial := out.Meta[MetaPartial]; partial != c.partial {
			t.Errorf("Merge %s (allowPartial %v): meta %v: got partial %v, want %v", c.name, c.partial, out.Meta, partial, c.partial)
		}
	}
}

// TestReadResultsBounded: a FIFO, a device and a file over the cap are
// refused at once, naming the file (and the cap), before a byte is read.
func TestReadResultsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"cases": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<40); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "is a FIFO"}, {"/dev/zero", "is a character device"}, {big, "limit of 67108864"},
	} {
		_, err := ReadResults(c.path, MaxResultsBytes)
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadResults(%s, %d): got error %v, want one naming the file and containing %q", c.path, MaxResultsBytes, err, c.want)
		}
	}
}

// TestSameDecadeRenders: a plot whose values are all the same power of
// ten (every case of an op moving exactly 1000 GM bytes) must render: its
// log axis spans at least one decade.
func TestSameDecadeRenders(t *testing.T) {
	cs := New("r", cases(t)).Details.Cases
	for i := range cs {
		if cs[i].Cost != nil {
			cs[i].Cost.GMBytesIn, cs[i].Cost.GMBytesOut = 600, 400
		}
	}
	if err := FromCases("r", cs).HTML(&bytes.Buffer{}); err != nil {
		t.Errorf("vector_add cases (seed 7) with GM bytes in+out = 1000 each: HTML render: got %v, want none", err)
	}
	for _, c := range []struct{ lo, hi float64 }{{1000, 1000}, {1, 1}, {0.01, 0.01}, {3, 3}, {3, 70}} {
		a := logAxis("x", c.lo, c.hi, 0)
		if !(a.Min > 0 && a.Min <= c.lo && a.Max >= c.hi && a.Max > a.Min) {
			t.Errorf("logAxis(lo %v, hi %v, room 0): got [%v, %v], want a non-empty positive range holding both", c.lo, c.hi, a.Min, a.Max)
		}
	}
}

// badHTML is a section that fails to render as HTML (as a plot with an
// empty log-axis range did).
type badHTML struct{}

func (badHTML) Key() string                { return "bad_html" }
func (badHTML) Markdown(w io.Writer) error { _, err := io.WriteString(w, "## Bad\n\n"); return err }
func (badHTML) JSON() any                  { return "bad" }
func (badHTML) HTML(w io.Writer) error     { return errors.New("empty axis range") }

// TestWriteFilesAllOrNone: when one format cannot be rendered, no file of
// the previous run is replaced (not report.md, not report.json) and the
// error is a *RenderError naming the format, not the directory.
func TestWriteFilesAllOrNone(t *testing.T) {
	dir := t.TempDir()
	old := map[string]string{}
	for _, f := range []string{"md", "json", "html"} {
		old[f] = "previous run's report." + f
		if err := os.WriteFile(filepath.Join(dir, "report."+f), []byte(old[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := New("r", cases(t)[:2])
	r.Add(badHTML{})
	_, err := r.WriteFiles(dir, []string{"md", "json", "html"})
	var re *RenderError
	if !errors.As(err, &re) || re.Format != "html" || !strings.Contains(err.Error(), "rendering report.html") {
		t.Errorf("WriteFiles md,json,html with a section whose HTML fails: got error %v, want a *RenderError for html", err)
	}
	for f, want := range old {
		b, _ := os.ReadFile(filepath.Join(dir, "report."+f))
		if string(b) != want {
			t.Errorf("WriteFiles md,json,html, HTML render failing: report.%s: got %d bytes, want the previous run's %q", f, len(b), want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Errorf("WriteFiles left temporary files: %v", es)
	}
	// A target that is not a regular file is refused before any is replaced.
	if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "report.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New("r", cases(t)[:2]).WriteFiles(dir, []string{"md", "json"}); err == nil || !strings.Contains(err.Error(), "report.json") {
		t.Errorf("WriteFiles md,json over a directory report.json: got error %v, want one naming report.json", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(b) != old["md"] {
		t.Errorf("WriteFiles md,json over a directory report.json: report.md replaced (%d bytes), want the previous run's", len(b))
	}
}
