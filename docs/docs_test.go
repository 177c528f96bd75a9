package docs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, the parent of this package's directory.
const root = ".."

// ignored are the paths .gitignore keeps out of the tree (build and report
// output), relative to root, slash-separated.
var ignored = []string{".git", "bin", "out", "report/out", "npuverify"}

// textFiles returns every file of the tree that is text (no NUL byte in
// its first 8 KiB), relative to root, slash-separated, with its content.
func textFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if slices.Contains(ignored, rel) || strings.HasSuffix(rel, ".test") || strings.HasSuffix(rel, ".prof") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b[:min(len(b), 8<<10)], 0) >= 0 {
			return nil
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		t.Fatalf("walking the repository at %s: %v", root, err)
	}
	if _, ok := files["README.md"]; !ok {
		t.Fatalf("walking the repository at %s: no README.md found (%d text files): is %s the repository root?", root, len(files), root)
	}
	return files
}

// TestNoDesignNoteReferences fails when any text file of the tree refers to
// the design note: users never see it, so code comments, READMEs and the
// Makefile point at docs/ instead.
func TestNoDesignNoteReferences(t *testing.T) {
	// Spelled in two pieces so that this file does not match itself.
	design := regexp.MustCompile(`\b` + "DESI" + `GN\b`)
	files := textFiles(t)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for i, line := range strings.Split(string(files[name]), "\n") {
			if design.MatchString(line) {
				t.Errorf("%s:%d refers to the design note, which users never see; point at docs/ instead:\n\t%s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// docPages are the Markdown files whose links are checked: every page of
// docs/, the top-level README and any other .md file of the tree.
func docPages(t *testing.T, files map[string][]byte) []string {
	t.Helper()
	var pages []string
	for name := range files {
		if strings.HasSuffix(name, ".md") {
			pages = append(pages, name)
		}
	}
	slices.Sort(pages)
	if !slices.Contains(pages, "README.md") || !slices.Contains(pages, "docs/README.md") {
		t.Fatalf("found only %v: want README.md and the pages of docs/", pages)
	}
	return pages
}

var (
	// mdLink matches an inline Markdown link or image target: ](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// docRef matches a reference to a page of docs/ in any text, e.g. a code
	// comment "(docs/accuracy.md)" or "docs/cli.md#mutate".
	docRef = regexp.MustCompile(`docs/[A-Za-z0-9_.-]+\.md(#[A-Za-z0-9_-]+)?`)
	// fence matches a fenced code block, whose content is not Markdown.
	fence = regexp.MustCompile("(?s)\n```.*?\n```")
)

// TestLinksResolve fails when a relative link in a Markdown file of the
// tree (README.md, docs/*.md, golden/cases/README.md) names a file that
// does not exist, or an anchor that no heading of the target page
// produces, and when any text file (a code comment, a README) names a
// docs/ page or anchor that does not exist.
func TestLinksResolve(t *testing.T) {
	files := textFiles(t)
	checked := 0
	for _, page := range docPages(t, files) {
		text := fence.ReplaceAllString(string(files[page]), "\n")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := page // an anchor-only link points into the page itself
			if file != "" {
				resolved = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
			}
			checked++
			if msg := resolve(files, resolved, anchor); msg != "" {
				t.Errorf("%s: link %q: %s", page, target, msg)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found in the documentation: the link pattern is broken")
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for _, ref := range docRef.FindAllString(string(files[name]), -1) {
			file, anchor, _ := strings.Cut(ref, "#")
			if msg := resolve(files, file, anchor); msg != "" {
				t.Errorf("%s: reference %q: %s", name, ref, msg)
			}
		}
	}
}

// resolve returns why path#anchor does not resolve in the tree, or "".
func resolve(files map[string][]byte, path, anchor string) string {
	if strings.HasPrefix(path, "../") || path == ".." {
		return "points outside the repository"
	}
	b, isText := files[path]
	if !isText {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			return "no such file or directory " + path
		}
		if anchor != "" && !st.IsDir() {
			return "anchor #" + anchor + " into a file that is not Markdown"
		}
		return ""
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(path, ".md") {
		return "" // a line anchor into source (#L10) is GitHub's, not checked
	}
	if !slices.Contains(anchors(string(b)), anchor) {
		return "no heading of " + path + " has the anchor #" + anchor
	}
	return ""
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// page: lower case, punctuation other than - and _ dropped, spaces as -,
// and -1, -2, ... appended to repeats.
func anchors(md string) []string {
	md = fence.ReplaceAllString(md, "\n")
	seen := map[string]int{}
	var out []string
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var sb strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				sb.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				sb.WriteRune(r)
			}
		}
		a := sb.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}
