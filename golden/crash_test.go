package golden

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/ops"
)

// The crash test (issue 4: nothing lost): an update runs in a child process
// (this test binary re-executed) that stops after its N-th file-system step
// and is killed with SIGKILL there, for every N. After recovery every case
// directory must be wholly old or wholly new (or absent where the old or
// new set has no such case), nothing temporary may remain, and Verify must
// pass.

const (
	envCrashDir      = "NPUVERIFY_GOLDEN_CRASH_DIR"
	envCrashAt       = "NPUVERIFY_GOLDEN_CRASH_AT"
	envCrashFallback = "NPUVERIFY_GOLDEN_CRASH_FALLBACK"
	pauseLine        = "GOLDEN-CRASH-PAUSED"
)

// crashOld and crashNew are the two sets: one case unchanged, one changed
// (another seed), one removed, one added.
func crashOld() []*caseSpec {
	return []*caseSpec{{"fp16_uniform_n15", 0}, {"fp16_uniform_n17", 0}, {"int8_uniform_n16", 0}}
}

func crashNew() []*caseSpec {
	return []*caseSpec{{"fp16_uniform_n15", 0}, {"fp16_uniform_n17", 7}, {"fp32_uniform_n33", 0}}
}

type caseSpec struct {
	name  string
	shift uint64
}

func crashCases(specs []*caseSpec) []ops.Case {
	var out []ops.Case
	for _, s := range specs {
		c := smallCases(s.shift, s.name)[0]
		out = append(out, c)
	}
	return out
}

// TestCrashChild is the child side; it does nothing unless the parent set
// the environment.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(envCrashDir)
	if dir == "" {
		t.Skip("child process of TestUpdateCrash only")
	}
	at, err := strconv.Atoi(os.Getenv(envCrashAt))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(envCrashFallback) != "" {
		useExchange = false
	}
	n := 0
	fileOpHook = func(string) {
		n++
		if n == at {
			fmt.Println(pauseLine)
			os.Stdout.Sync()
			time.Sleep(2 * time.Minute) // killed here
		}
	}
	if _, err := Update(context.Background(), dir, newEmulator(), crashCases(crashNew()), io.Discard); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary many times")
	}
	for _, fallback := range []bool{false, true} {
		name := "exchange"
		if fallback {
			name = "two-rename"
		}
		t.Run(name, func(t *testing.T) { testUpdateCrash(t, fallback) })
	}
}

func testUpdateCrash(t *testing.T, fallback bool) {
	ctx := context.Background()
	base := t.TempDir()
	oldDir := filepath.Join(base, "old")
	if _, err := Update(ctx, oldDir, newEmulator(), crashCases(crashOld()), io.Discard); err != nil {
		t.Fatal(err)
	}
	newDir := filepath.Join(base, "new")
	if _, err := Update(ctx, newDir, newEmulator(), crashCases(crashNew()), io.Discard); err != nil {
		t.Fatal(err)
	}
	oldTrees, newTrees := trees(t, oldDir), trees(t, newDir)

	// Count the steps of the full update in process.
	steps := 0
	countDir := filepath.Join(base, "count")
	copyDir(t, oldDir, countDir)
	defer func(u bool) { fileOpHook, useExchange = nil, u }(useExchange)
	useExchange = !fallback
	fileOpHook = func(string) { steps++ }
	if _, err := Update(ctx, countDir, newEmulator(), crashCases(crashNew()), io.Discard); err != nil {
		t.Fatal(err)
	}
	fileOpHook, useExchange = nil, true
	if got := trees(t, countDir); !equalTrees(got, newTrees) {
		t.Fatal("an uninterrupted update does not produce the new set")
	}
	if steps < 10 {
		t.Fatalf("only %d steps counted", steps)
	}

	sawMixed := false
	for at := 1; at <= steps; at++ {
		dir := filepath.Join(base, fmt.Sprintf("crash%03d", at))
		copyDir(t, oldDir, dir)
		killed := runChild(t, dir, at, fallback)
		if !killed {
			t.Fatalf("step %d: the child finished before its pause", at)
		}
		if err := recoverUpdates(dir); err != nil {
			t.Fatalf("step %d: %v", at, err)
		}
		s, err := openT(t, dir)
		if err != nil {
			t.Fatalf("step %d: %v", at, err)
		}
		got := trees(t, dir)
		nOld, nNew := 0, 0
		for _, id := range slices.Sorted(maps.Keys(unionKeys(oldTrees, newTrees))) {
			g, o, n := got[id], oldTrees[id], newTrees[id]
			isOld, isNew := equalTree(g, o), equalTree(g, n)
			if !isOld && !isNew {
				t.Errorf("step %d: %s is neither wholly old nor wholly new: files %v", at, id, slices.Sorted(maps.Keys(g)))
			}
			if isOld && !equalTree(o, n) {
				nOld++
			}
			if isNew && !equalTree(o, n) {
				nNew++
			}
		}
		if nOld > 0 && nNew > 0 {
			sawMixed = true
		}
		for id := range got {
			if _, ok := unionKeys(oldTrees, newTrees)[id]; !ok {
				t.Errorf("step %d: unexpected case %s", at, id)
			}
		}
		if leftovers := hidden(t, dir); len(leftovers) > 0 {
			t.Errorf("step %d: temporary entries survive recovery: %v", at, leftovers)
		}
		for _, err := range Verify(s) {
			t.Errorf("step %d: %v", at, err)
		}
		s.Close()
		// Rerunning the update completes the set.
		if at%5 == 0 || at == steps {
			if _, err := Update(ctx, dir, newEmulator(), crashCases(crashNew()), io.Discard); err != nil {
				t.Fatal(err)
			}
			if !equalTrees(trees(t, dir), newTrees) {
				t.Errorf("step %d: rerunning the update does not give the new set", at)
			}
		}
		os.RemoveAll(dir)
	}
	if !sawMixed {
		t.Error("no crash point left a mix of old and new cases: the test does not exercise the protocol")
	}
	t.Logf("%d crash points, each case wholly old or wholly new", steps)
}

// runChild runs the update in a child process that pauses after step at,
// kills it with SIGKILL there and reports whether it was killed.
func runChild(t *testing.T, dir string, at int, fallback bool) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envCrashDir+"="+dir, envCrashAt+"="+strconv.Itoa(at))
	if fallback {
		cmd.Env = append(cmd.Env, envCrashFallback+"=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // never leave a paused child behind
	paused := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		p := false
		for sc.Scan() {
			if sc.Text() == pauseLine {
				p = true
				break
			}
		}
		paused <- p
		io.Copy(io.Discard, out)
	}()
	var p bool
	select {
	case p = <-paused:
	case <-time.After(30 * time.Second):
		t.Fatalf("step %d: child did not pause\n%s", at, stderr.String())
	}
	if p {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	err = cmd.Wait()
	if !p && err != nil {
		t.Fatalf("step %d: child failed: %v\n%s", at, err, stderr.String())
	}
	return p
}

// trees reads every case directory of dir (every non-hidden directory two
// levels down, whether or not it holds a case.json): ID → relative path →
// content.
func trees(t *testing.T, dir string) map[string]map[string][]byte {
	t.Helper()
	var ids []string
	ops, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if !op.IsDir() || strings.HasPrefix(op.Name(), ".") {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(dir, op.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				ids = append(ids, op.Name()+"/"+e.Name())
			}
		}
	}
	out := map[string]map[string][]byte{}
	for _, id := range ids {
		tr, err := readTree(filepath.Join(dir, filepath.FromSlash(id)))
		if err != nil {
			t.Fatal(err)
		}
		out[id] = tr
	}
	return out
}

func equalTree(a, b map[string][]byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameTree(a, b)
}

func equalTrees(a, b map[string]map[string][]byte) bool {
	return maps.EqualFunc(a, b, equalTree)
}

// hidden lists entries starting with "." anywhere under dir.
func hidden(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") && p != dir && p != filepath.Join(dir, MarkerName) {
			out = append(out, p)
		}
		return err
	})
	return out
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecoverRestoresOld covers the fallback's one dangerous state by
// hand: the old case renamed away, the new one not yet in place.
func TestRecoverRestoresOld(t *testing.T) {
	dir := t.TempDir()
	if _, err := Update(context.Background(), dir, newEmulator(), crashCases(crashOld()), io.Discard); err != nil {
		t.Fatal(err)
	}
	before := trees(t, dir)
	op := filepath.Join(dir, "vector_add")
	if err := os.Rename(filepath.Join(op, "fp16_uniform_n17"), filepath.Join(op, oldPrefix+"fp16_uniform_n17")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(op, tmpPrefix+"fp16_uniform_n17", "expected"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(op, delPrefix+"int8_uniform_n16"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := recoverUpdates(dir); err != nil {
		t.Fatal(err)
	}
	if !equalTrees(trees(t, dir), before) {
		t.Error("recovery did not restore the old case")
	}
	if h := hidden(t, dir); len(h) > 0 {
		t.Errorf("leftovers: %v", h)
	}
}
