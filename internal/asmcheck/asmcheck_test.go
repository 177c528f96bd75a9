package asmcheck_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module root, two directories up.
const root = "../.."

// xReg matches an operand that names an X register (X0–X15, or an
// AVX-512 one), and not a Y or Z register or a symbol that holds an X.
var xReg = regexp.MustCompile(`(^|[\s,(])X([0-9]|[12][0-9]|3[01])($|[\s,)])`)

// legacySSE returns a finding for each line of the amd64 assembly src
// whose instruction names an X register with a legacy (non-VEX)
// mnemonic, as "line: mnemonic". Inside a #define, a line whose mnemonic
// is one of the macro's parameters (an instruction passed in, such as
// BCAST or INSN) is the caller's to choose and not checked here; macro
// invocations (NAME(...)) are checked where the macro is defined.
func legacySSE(src []byte) []string {
	var found []string
	var params []string // the parameters of the #define being read, if any
	inMacro := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		cont := strings.HasSuffix(strings.TrimSpace(line), `\`)
		line = strings.TrimSuffix(strings.TrimSpace(line), `\`)
		if rest, ok := strings.CutPrefix(line, "#define"); ok {
			inMacro, params = cont, macroParams(rest)
			line = ""
		}
		if !inMacro {
			params = nil
		}
		// A label may share the line with an instruction.
		if i := strings.Index(line, ":"); i >= 0 && !strings.ContainsAny(line[:i], " \t(") {
			line = line[i+1:]
		}
		fields := strings.Fields(line)
		if len(fields) > 0 {
			mn := fields[0]
			operands := strings.TrimSpace(strings.TrimPrefix(line, mn))
			switch {
			case strings.HasPrefix(mn, "#"), strings.Contains(mn, "("), slices.Contains(params, mn):
			case strings.HasPrefix(mn, "V"):
			case xReg.MatchString(operands):
				found = append(found, strconv.Itoa(n)+": "+mn)
			}
		}
		if !cont {
			inMacro = false
		}
	}
	return found
}

// macroParams returns the parameter names of a #define's rest of line,
// " NAME(A, B) \" → [A B]; none for a macro without parameters.
func macroParams(rest string) []string {
	open, end := strings.Index(rest, "("), strings.Index(rest, ")")
	if open < 0 || end < open {
		return nil
	}
	var ps []string
	for p := range strings.SplitSeq(rest[open+1:end], ",") {
		ps = append(ps, strings.TrimSpace(p))
	}
	return ps
}

// TestNoLegacySSE holds every amd64 assembly file of the module to the
// package's rule.
func TestNoLegacySSE(t *testing.T) {
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_amd64.s") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, p)
		for _, f := range legacySSE(src) {
			t.Errorf("%s:%s names an X register with a legacy SSE mnemonic; write its VEX form (V%s)",
				filepath.ToSlash(rel), f, f[strings.LastIndex(f, " ")+1:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no *_amd64.s file under %s: the walk is looking in the wrong place", root)
	}
}

// TestLegacySSEFinds holds the scanner to hand-written lines: each legacy
// form is found (at its line), and the VEX forms, Y registers, macro
// parameters, invocations and comments are not.
func TestLegacySSEFinds(t *testing.T) {
	src := `#include "textflag.h"
// MOVQ AX, X0 in a comment
#define SETUP(BCAST) \
	MOVQ     R10, X0 \
	BCAST    X0, Y10 \
	VMOVQ    R11, X1

TEXT ·f(SB), NOSPLIT, $0-8
	MOVQ         AX, X0
	VMOVQ        AX, X1
	VPBROADCASTQ X1, Y1
	SETUP(VPBROADCASTQ)
	HMAX(Y12, X12)
	MOVQ         AX, BX
	MOVQ         X3, AX
loop:	MOVSD        X0, ret+0(FP)
	MOVUPS       (SI), X12
	VMOVUPS      (SI), Y12
	MOVQ         AX, X21
	VZEROUPPER
	RET
`
	want := []string{"4: MOVQ", "9: MOVQ", "15: MOVQ", "16: MOVSD", "17: MOVUPS", "19: MOVQ"}
	if got := legacySSE([]byte(src)); !slices.Equal(got, want) {
		t.Errorf("legacySSE(hand-written lines) = %q, want %q", got, want)
	}
}
