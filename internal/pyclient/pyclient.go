// Package pyclient finds, for the tests that run them, the Python client
// of the exec and worker protocols (clients/python) and a Python 3 that
// can import NumPy, the client's one dependency. Without such an
// interpreter those tests skip, saying what was tried (CI installs
// Debian's python3-numpy: .ci/run).
package pyclient

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Env names an interpreter to use instead of searching for one.
const Env = "NPUVERIFY_PYTHON"

// find is the interpreter search, done once per test binary.
var find = sync.OnceValues(search)

// search returns the first interpreter that imports numpy: $NPUVERIFY_PYTHON
// when set (and then only it), else python3 on PATH, else /usr/bin/python3
// (Debian's python3-numpy installs for the system interpreter, which a
// python3 earlier on PATH, such as pyenv's, does not see).
func search() (string, error) {
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv(Env); p != "" {
		candidates = []string{p}
	}
	var tried []string
	seen := map[string]bool{}
	for _, c := range candidates {
		p, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		out, err := exec.Command(p, "-c", "import numpy").CombinedOutput()
		if err != nil {
			msg := strings.TrimSpace(string(out))
			if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
				msg = msg[i+1:]
			}
			tried = append(tried, fmt.Sprintf("%s -c 'import numpy': %v (%s)", p, err, msg))
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("no Python 3 with NumPy (tried %s; apt-get install python3-numpy, or set %s)",
		strings.Join(tried, "; "), Env)
}

// Python returns the path of a Python 3 interpreter that imports numpy,
// and skips tb when there is none.
func Python(tb testing.TB) string {
	tb.Helper()
	p, err := find()
	if err != nil {
		tb.Skipf("the Python client's tests need it: %v", err)
	}
	return p
}

// Dir returns the absolute path of clients/python, found from this file's
// own path (the tests that use it run in different directories).
func Dir(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("pyclient: runtime.Caller cannot say where this source file is")
	}
	dir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "clients", "python"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "npuverify_client.py")); err != nil {
		tb.Fatalf("pyclient: the Python client: %v", err)
	}
	return dir
}

// Command returns the command line of the backend spec (exec:… or
// worker:…) that runs the Python script at path with python: each word
// single-quoted, as SplitCommandLine reads it.
func Command(python, path string) string {
	return quote(python) + " " + quote(path)
}

func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
