package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

// storeMarker is the content golden update writes to a new store's marker.
const storeMarker = `{"format":1,"kind":"npuverify golden store"}` + "\n"

// treeDigest describes every entry under root (root itself when it is not
// a directory): slash path → type, mode and sha256 of the content (the
// target of a symlink). A missing root digests to nothing.
func treeDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256:%x", sha256.Sum256(b))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rehashCase records in caseDir's case.json the sha256 of every listed
// file as it is now.
func rehashCase(t *testing.T, caseDir string) {
	t.Helper()
	editCaseJSON(t, filepath.Join(caseDir, "case.json"), func(m map[string]any) {
		for _, key := range []string{"inputs", "outputs"} {
			list, _ := m[key].([]any)
			for _, e := range list {
				entry := e.(map[string]any)
				b, err := os.ReadFile(filepath.Join(caseDir, filepath.FromSlash(entry["file"].(string))))
				if err != nil {
					continue // the entry is about a missing file
				}
				entry["sha256"] = fmt.Sprintf("%x", sha256.Sum256(b))
			}
		}
	})
}

// entry returns element i of the list m[key] of case.json.
func entry(m map[string]any, key string, i int) map[string]any {
	return m[key].([]any)[i].(map[string]any)
}

// param returns the params object of case.json.
func param(m map[string]any) map[string]any { return m["params"].(map[string]any) }

// TestBadInputCatalogue runs the catalogue.
func TestBadInputCatalogue(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake kernels are shell scripts")
	}
	cat := badInputCatalogue()
	if len(cat) < 30 {
		t.Fatalf("the catalogue has %d entries, want at least 30", len(cat))
	}
	t.Logf("bad-input catalogue: %d situations", len(cat))
	shared := t.TempDir()
	x, y, _, _ := writeInputs(t, shared, "fp16", 17)
	kernels, err := filepath.Abs(filepath.Join("..", "..", "backend", "testdata", "kernels"))
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{
		vectorCase: filepath.Join("..", "..", "golden", "cases"),
		gemmCase:   gemmStore(t),
	}
	seen := map[string]bool{}
	for _, c := range cat {
		if seen[c.name] {
			t.Fatalf("duplicate entry %q", c.name)
		}
		seen[c.name] = true
		if c.code != exitUsage && c.code != exitBackend && len(c.unchanged)+len(c.stdout) == 0 {
			t.Fatalf("%s: wanted exit code %d; the catalogue holds input (2) and backend (3) errors, and other exits only with what must stay unchanged or be printed", c.name, c.code)
		}
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			vars := []string{"{dir}", dir, "{out}", filepath.Join(dir, "out"), "{x}", x, "{y}", y, "{kernels}", kernels}
			if c.store != "" {
				store := t.TempDir()
				copyCase(t, sources[c.store], store, c.store)
				if !c.noMarker {
					if err := os.WriteFile(filepath.Join(store, golden.MarkerName), []byte(storeMarker), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				vars = append(vars, "{store}", store, "{case}", filepath.Join(store, filepath.FromSlash(c.store)), "{id}", c.store)
			}
			r := strings.NewReplacer(vars...)
			expand := func(ss []string) []string {
				out := make([]string, len(ss))
				for i, s := range ss {
					out[i] = r.Replace(s)
				}
				return out
			}
			if c.edit != nil {
				editCaseJSON(t, filepath.Join(r.Replace("{case}"), "case.json"), c.edit)
			}
			for name, content := range c.files {
				p := r.Replace(name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(name, "/") { // a directory
					continue
				}
				mode := os.FileMode(0o644)
				if strings.HasSuffix(p, ".sh") {
					content, mode = []byte(r.Replace(string(content))), 0o755
				}
				if err := os.WriteFile(p, content, mode); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range c.remove {
				if err := os.Remove(r.Replace(p)); err != nil {
					t.Fatal(err)
				}
			}
			for name, size := range c.sizes {
				if err := os.Truncate(r.Replace(name), size); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range c.fifos {
				if err := syscall.Mkfifo(r.Replace(p), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for p, target := range c.links {
				if err := os.Symlink(r.Replace(target), r.Replace(p)); err != nil {
					t.Fatal(err)
				}
			}
			if c.rehash {
				rehashCase(t, r.Replace("{case}"))
			}
			for k, v := range c.env {
				t.Setenv(k, r.Replace(v))
			}
			work := filepath.Join(dir, "tmp")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", work)
			digests := map[string]map[string]string{}
			for _, p := range expand(c.unchanged) {
				digests[p] = treeDigest(t, p)
			}
			checkUnchanged := func(after string) {
				t.Helper()
				for _, p := range expand(c.unchanged) {
					if got := treeDigest(t, p); !maps.Equal(got, digests[p]) {
						t.Errorf("%s changed %s:\nbefore: %v\nafter:  %v", after, p, digests[p], got)
					}
				}
			}

			args := expand(c.args)
			var stdout, stderr bytes.Buffer
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code := run(args, &stdout, &stderr)
			runtime.ReadMemStats(&after)
			e := stderr.String()
			cmdline := "npuverify " + strings.Join(args, " ")
			if code != c.code {
				t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", cmdline, code, c.code, stdout.String(), e)
			}
			if code >= exitUsage && !strings.HasPrefix(e, "npuverify: ") {
				t.Errorf("%s: stderr does not start with \"npuverify: \":\n%s", cmdline, e)
			}
			if code == exitUsage && strings.Contains(stdout.String(), "usage:") {
				t.Errorf("%s: a usage error printed the usage to stdout:\n%s", cmdline, stdout.String())
			}
			for _, s := range expand(c.stdout) {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("%s: stdout lacks %q:\n%s", cmdline, s, stdout.String())
				}
			}
			checkUnchanged(cmdline)
			for _, s := range expand(c.want) {
				if !strings.Contains(e, s) {
					t.Errorf("%s: stderr lacks %q:\n%s", cmdline, s, e)
				}
			}
			noPanic(t, cmdline, stdout.String()+e)
			noRawControl(t, cmdline, stdout.String()+e)
			noLeak(t, cmdline, work, expand(c.pidfiles))
			if c.maxAlloc > 0 {
				if got := after.TotalAlloc - before.TotalAlloc; got > c.maxAlloc {
					t.Errorf("%s: allocated %d bytes, want at most %d", cmdline, got, c.maxAlloc)
				} else {
					t.Logf("%s: allocated %d bytes (limit %d)", c.name, got, c.maxAlloc)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "out", "z.npy")); err == nil {
				t.Errorf("%s: a failed run wrote an output", cmdline)
			}

			if c.verify != nil {
				vargs := expand([]string{"golden", "verify", "--dir", "{store}"})
				var o, ve bytes.Buffer
				vcode := run(vargs, &o, &ve)
				vcmd := "npuverify " + strings.Join(vargs, " ")
				if vcode != exitFail {
					t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", vcmd, vcode, exitFail, o.String(), ve.String())
				}
				if !strings.HasPrefix(ve.String(), "npuverify: golden verify: ") {
					t.Errorf("%s: stderr does not start with \"npuverify: golden verify: \":\n%s", vcmd, ve.String())
				}
				for _, s := range expand(c.verify) {
					if !strings.Contains(ve.String(), s) {
						t.Errorf("%s: stderr lacks %q:\n%s", vcmd, s, ve.String())
					}
				}
				noPanic(t, vcmd, o.String()+ve.String())
				checkUnchanged(vcmd)
			}
		})
	}
}

// noPanic fails when output shows a panic or an internal error.
func noPanic(t *testing.T, cmdline, output string) {
	t.Helper()
	for _, s := range []string{"panic", "goroutine ", "internal error"} {
		if strings.Contains(output, s) {
			t.Errorf("%s: output contains %q:\n%s", cmdline, s, output)
		}
	}
}

// noRawControl fails when output carries an escape or a carriage return:
// a kernel's stderr or a path printed raw could forge a line of the harness
// or rewrite the terminal.
func noRawControl(t *testing.T, cmdline, output string) {
	t.Helper()
	if i := strings.IndexAny(output, "\x1b\r"); i >= 0 {
		t.Errorf("%s: output carries a raw control character %q at byte %d:\n%q", cmdline, output[i], i, output)
	}
}

// noLeak fails when the run left an entry in work (its TMPDIR, where the
// exec backend makes case directories) or a process whose pid a kernel
// recorded in one of pidfiles is still in /proc (alive, or dead and not
// reaped) 3 s after the run.
func noLeak(t *testing.T, cmdline, work string, pidfiles []string) {
	t.Helper()
	if left, err := os.ReadDir(work); err != nil || len(left) > 0 {
		t.Errorf("%s: left in its TMPDIR %s: %v %v", cmdline, work, left, err)
	}
	for _, pf := range pidfiles {
		b, err := os.ReadFile(pf)
		pid, err2 := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || err2 != nil {
			t.Errorf("%s: the kernel recorded no pid in %s (%v %v): the leak check cannot run", cmdline, pf, err, err2)
			continue
		}
		if !gone(pid) {
			t.Errorf("%s: process %d (from %s) outlived the run", cmdline, pid, pf)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// gemmStore records a tiny gemm case with the emulator into a new store
// and returns the store's directory.
func gemmStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	c := ops.Case{Name: "tiny", Op: "gemm", Params: ops.Params{"mode": "fp16_fp32acc"},
		Dims: map[string]int{"m": 2, "k": 3, "n": 2}, Dist: ops.DistUniform, Seed: 7, Policy: "bound"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := golden.Update(ctx, dir, emulator.New(npu.Ascend910B()), []ops.Case{c}, io.Discard); err != nil {
		t.Fatalf("recording the gemm case: %v", err)
	}
	if errs := golden.Verify(mustOpen(t, dir)); len(errs) > 0 {
		t.Fatalf("the recorded gemm case does not verify: %v", errs)
	}
	return dir
}

func mustOpen(t *testing.T, dir string) *golden.Store {
	t.Helper()
	s, err := golden.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// copyCase copies case id of the store in src to the store in dst.
func copyCase(t *testing.T, src, dst, id string) {
	t.Helper()
	to := filepath.Join(dst, filepath.FromSlash(id))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(to, os.DirFS(filepath.Join(src, filepath.FromSlash(id)))); err != nil {
		t.Fatal(err)
	}
}

// editCaseJSON applies edit to the case.json at p.
func editCaseJSON(t *testing.T, p string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
