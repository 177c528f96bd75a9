package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// npuverify is the npuverify binary TestMain builds from this tree, so that
// the flags the deployment files pass are checked against the real usage.
var npuverify string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy tests: temp dir:", err)
		os.Exit(2)
	}
	npuverify = filepath.Join(dir, "npuverify")
	build := exec.Command("go", "build", "-o", npuverify, "./cmd/npuverify")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy tests: go build ./cmd/npuverify: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// usageFlag matches a flag line of the flag package's usage output.
var usageFlag = regexp.MustCompile(`(?m)^\s+-([A-Za-z][\w-]*)\b`)

// commandFlags returns the flag names `npuverify <cmd> -h` lists.
func commandFlags(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	c := exec.Command(npuverify, cmd, "-h")
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("npuverify %s -h: %v\n%s", cmd, err, out.String())
	}
	flags := map[string]bool{}
	for _, m := range usageFlag.FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("npuverify %s -h lists no flags:\n%s", cmd, out.String())
	}
	return flags
}

// invocation is one npuverify command line found in a shell script.
type invocation struct {
	cmd   string              // check, report, ...
	flags map[string][]string // flag name → the words after it up to the next flag
}

// findInvocation returns the first `npuverify <cmd>` command line of script
// (also as `go run ./cmd/npuverify <cmd>`), split into words with quotes
// removed. Words are whitespace-separated: the scripts quote no spaces.
func findInvocation(t *testing.T, where, script, cmd string) invocation {
	t.Helper()
	for _, line := range strings.Split(script, "\n") {
		words := strings.Fields(line)
		for i := 0; i+1 < len(words); i++ {
			if (words[i] == "npuverify" || strings.HasSuffix(words[i], "/cmd/npuverify")) && words[i+1] == cmd {
				inv := invocation{cmd: cmd, flags: map[string][]string{}}
				cur := ""
				for _, w := range words[i+2:] {
					w = strings.Trim(w, `"'`)
					if strings.HasPrefix(w, "-") {
						name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
						cur = name
						inv.flags[cur] = nil
						if hasVal {
							inv.flags[cur] = append(inv.flags[cur], val)
						}
						continue
					}
					if cur != "" {
						inv.flags[cur] = append(inv.flags[cur], w)
					}
				}
				return inv
			}
		}
	}
	t.Fatalf("%s: no `npuverify %s` command line in:\n%s", where, cmd, script)
	return invocation{}
}

// checkFlags fails for every flag of inv that `npuverify <cmd> -h` does not
// list.
func checkFlags(t *testing.T, where string, inv invocation) {
	t.Helper()
	known := commandFlags(t, inv.cmd)
	for name := range inv.flags {
		if !known[name] {
			t.Errorf("%s: npuverify %s --%s: not a flag `npuverify %s -h` lists (%v)", where, inv.cmd, name, inv.cmd, sortedKeys(known))
		}
	}
}

// sortedKeys returns m's keys in order, for messages.
func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decodeYAML decodes every document of the YAML file rel (relative to root)
// into a new T.
func decodeYAML[T any](t *testing.T, rel string) []T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []T
	for {
		var doc T
		err := dec.Decode(&doc)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("parsing %s (document %d): %v", rel, len(docs)+1, err)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("%s holds no YAML document", rel)
	}
	return docs
}
