package deploy_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, the parent of this package's directory.
const root = ".."

// buildScript is the ClusterFuzzLite build script, relative to root.
const buildScript = ".clusterfuzzlite/build.sh"

// fuzzTarget is one native Go fuzz target of the tree.
type fuzzTarget struct {
	pkg  string // import path of the package the target is compiled in
	dir  string // its directory, slash-separated, relative to root
	name string // FuzzXxx
	file string // the _test.go file declaring it, relative to root
}

// modulePath reads the module path from root's go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("reading go.mod: %v", err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("go.mod: no module line")
	}
	return string(m[1])
}

// isFuzzTarget reports whether fn is a fuzz target as go test sees one: a
// top-level func FuzzXxx(f *testing.F) with no receiver and no results.
func isFuzzTarget(fn *ast.FuncDecl) bool {
	name := fn.Name.Name
	if fn.Recv != nil || !strings.HasPrefix(name, "Fuzz") || fn.Type.Results != nil || fn.Type.TypeParams != nil {
		return false
	}
	if rest := strings.TrimPrefix(name, "Fuzz"); rest != "" && !ast.IsExported(rest) {
		return false // Fuzzy is not a target; go test wants Fuzz followed by a non-lowercase letter
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "F" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing"
}

// fuzzTargets parses every _test.go file of the tree (testdata, hidden and
// ignored directories skipped, as go test skips them) and returns its fuzz
// targets. A target in an external test package (package foo_test) is
// compiled as part of foo by build.sh, so its import path is the directory's.
func fuzzTargets(t *testing.T) []fuzzTarget {
	t.Helper()
	mod := modulePath(t)
	fset := token.NewFileSet()
	var targets []fuzzTarget
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "testdata" || base == "out" || base == "bin" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		pkg := mod
		if dir != "." {
			pkg = mod + "/" + dir
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && isFuzzTarget(fn) {
				targets = append(targets, fuzzTarget{pkg: pkg, dir: dir, name: fn.Name.Name, file: rel})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository at %s: %v", root, err)
	}
	return targets
}

// compileLine is one compile_native_go_fuzzer(_v2) call of build.sh.
type compileLine struct {
	line       int
	pkg, fn    string
	fuzzerName string
}

// compileLines returns build.sh's compile calls, with $module expanded to the
// module path (the one shell variable the script defines for them).
func compileLines(t *testing.T, mod string) []compileLine {
	t.Helper()
	f, err := os.Open(filepath.Join(root, buildScript))
	if err != nil {
		t.Fatalf("opening %s: %v", buildScript, err)
	}
	defer f.Close()
	call := regexp.MustCompile(`^compile_native_go_fuzzer(?:_v2)?\s+(\S+)\s+(\S+)\s+(\S+)\s*$`)
	var lines []compileLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		m := call.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		pkg := strings.NewReplacer("${module}", mod, "$module", mod).Replace(m[1])
		lines = append(lines, compileLine{line: n, pkg: pkg, fn: m[2], fuzzerName: m[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", buildScript, err)
	}
	return lines
}

// TestBuildScriptCompilesEveryFuzzTarget fails when a native Go fuzz target
// of the tree has no compile line in .clusterfuzzlite/build.sh naming its
// package, or when a compile line names a target that does not exist: a new
// operator's fuzz/<op>_test.go target would otherwise never be fuzzed by
// ClusterFuzzLite, and a stale line fails the container build.
func TestBuildScriptCompilesEveryFuzzTarget(t *testing.T) {
	mod := modulePath(t)
	targets := fuzzTargets(t)
	if len(targets) == 0 {
		t.Fatalf("no func FuzzXxx(f *testing.F) found under %s: is it the repository root?", root)
	}
	lines := compileLines(t, mod)
	type key struct{ pkg, fn string }
	compiled := map[key]compileLine{}
	names := map[string]int{}
	for _, l := range lines {
		if prev, dup := compiled[key{l.pkg, l.fn}]; dup {
			t.Errorf("%s:%d: %s %s compiled twice (also line %d)", buildScript, l.line, l.pkg, l.fn, prev.line)
		}
		compiled[key{l.pkg, l.fn}] = l
		if prev, dup := names[l.fuzzerName]; dup {
			t.Errorf("%s:%d: fuzzer name %s also used on line %d: the second binary would overwrite the first in $OUT", buildScript, l.line, l.fuzzerName, prev)
		}
		names[l.fuzzerName] = l.line
	}
	found := map[key]bool{}
	for _, tg := range targets {
		found[key{tg.pkg, tg.name}] = true
		if _, ok := compiled[key{tg.pkg, tg.name}]; !ok {
			t.Errorf("fuzz target %s (%s) is not compiled by %s: add\n\tcompile_native_go_fuzzer_v2 %s %s <fuzzer_name>",
				tg.name, tg.file, buildScript, strings.Replace(tg.pkg, mod, "$module", 1), tg.name)
		}
	}
	for _, l := range lines {
		if !found[key{l.pkg, l.fn}] {
			t.Errorf("%s:%d: compiles %s %s, but no func %s(f *testing.F) exists in that package's _test.go files", buildScript, l.line, l.pkg, l.fn, l.fn)
		}
	}
	t.Logf("%d fuzz targets, %d compile lines", len(targets), len(lines))
}

// TestFuzzTargetNamesAreUnambiguous fails when compile_native_go_fuzzer_v2
// would not find a target: the script greps the package directory's .go files
// for lines holding "func <Name>" and "testing.F" and, unless exactly one
// matches, prints a message and builds nothing. FuzzGEMM beside a FuzzGEMMBig
// in one directory would be skipped that way.
func TestFuzzTargetNamesAreUnambiguous(t *testing.T) {
	for _, tg := range fuzzTargets(t) {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(tg.dir)))
		if err != nil {
			t.Fatalf("reading %s: %v", tg.dir, err)
		}
		var hits []string
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(tg.dir), e.Name()))
			if err != nil {
				t.Fatalf("reading %s/%s: %v", tg.dir, e.Name(), err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "func "+tg.name) && strings.Contains(line, "testing.F") {
					hits = append(hits, tg.dir+"/"+e.Name()+":"+strconv.Itoa(i+1))
				}
			}
		}
		if len(hits) != 1 {
			slices.Sort(hits)
			t.Errorf("fuzz target %s (%s): %d lines in %s hold \"func %s\" and \"testing.F\", compile_native_go_fuzzer_v2 needs exactly 1: %v",
				tg.name, tg.pkg, len(hits), tg.dir, tg.name, hits)
		}
	}
}
