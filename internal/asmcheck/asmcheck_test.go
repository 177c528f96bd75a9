package asmcheck_test

import (
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

// xReg matches an operand that names an X register and yReg one that
// names a Y or Z register (a Z register's upper half is dirty as a Y
// register's is, and VZEROUPPER clears both), the AVX-512 ones (16–31)
// included, and not a register of the other kinds or a symbol whose name
// holds one.
var xReg, yReg = vecReg("X"), vecReg("[YZ]")

func vecReg(kind string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s,(])` + kind + `([0-9]|[12][0-9]|3[01])($|[\s,)])`)
}

// asmLine is one line of an assembly file that holds an instruction or a
// label, its comment and line continuation removed.
type asmLine struct {
	n     int    // line number, from 1
	text  string // the instruction, trimmed; "" on a line with a label alone
	label bool   // the line starts with a label: a jump may arrive here
	macro string // the #define it belongs to, if any
	body  string // the function (TEXT line) or macro it belongs to
}

// finding is a line that breaks a rule, and what on it does.
type finding struct {
	n    int
	what string
}

func (f finding) String() string { return strconv.Itoa(f.n) + ": " + f.what }

// parseAsm returns src's lines that hold an instruction or a label, and
// the parameters of each macro it defines (its keys are the macros).
func parseAsm(src []byte) (lines []asmLine, params map[string][]string) {
	params = map[string][]string{}
	fn, macro := "", ""
	for i, line := range strings.Split(string(src), "\n") {
		if j := strings.Index(line, "//"); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		cont := strings.HasSuffix(line, `\`)
		line = strings.TrimSpace(strings.TrimSuffix(line, `\`))
		rest, isDefine := strings.CutPrefix(line, "#define")
		switch {
		case isDefine && strings.TrimSpace(rest) != "":
			macro = mnemonic(rest)
			params[macro] = macroParams(rest)
			line = ""
		case strings.HasPrefix(line, "TEXT"):
			fn, line = line, ""
		}
		l := asmLine{n: i + 1, macro: macro, body: fn}
		if macro != "" {
			l.body = "#define " + macro
		}
		if j := strings.Index(line, ":"); j >= 0 && !strings.ContainsAny(line[:j], " \t(") {
			l.label, line = true, strings.TrimSpace(line[j+1:])
		}
		if l.text = line; l.text != "" || l.label {
			lines = append(lines, l)
		}
		if !cont {
			macro = ""
		}
	}
	return lines, params
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

// mnemonic returns an instruction's first word up to any "(": an
// instruction, a macro's name, or a macro parameter in the mnemonic's
// place.
func mnemonic(text string) string {
	name, _, _ := strings.Cut(strings.Fields(text)[0], "(")
	return name
}

// legacySSE returns the lines of the amd64 assembly src whose instruction
// names an X register with a legacy (non-VEX) mnemonic. Inside a
// #define, a line whose mnemonic is one of the macro's parameters (an
// instruction passed in, such as BCAST or INSN) is the caller's to
// choose and not checked here; macro invocations (NAME(...)) are checked
// where the macro is defined.
func legacySSE(src []byte) []finding {
	lines, params := parseAsm(src)
	var found []finding
	for _, l := range lines {
		if l.text == "" {
			continue
		}
		first := strings.Fields(l.text)[0]
		operands := strings.TrimPrefix(l.text, first)
		switch {
		case strings.HasPrefix(first, "#"), strings.Contains(first, "("), slices.Contains(params[l.macro], first):
		case strings.HasPrefix(first, "V"):
		case xReg.MatchString(operands):
			found = append(found, finding{l.n, first})
		}
	}
	return found
}

// dirtyingRet returns each RET of the amd64 assembly src that may return
// with the upper halves of the Y registers in use: in a function or macro
// with a line that touches a Y register (names one, invokes a macro with
// such a line, or, in a macro, runs an instruction or macro its caller
// passes in), a RET whose lines before it, back to the nearest
// VZEROUPPER, touch a Y register or hold a label (a jump may arrive there
// from before the VZEROUPPER). Returning dirty costs the caller's Go
// code, which is all legacy SSE, the state switch at its first
// floating-point instruction. A RET inside a macro is checked within the
// macro's body.
func dirtyingRet(src []byte) []finding {
	lines, params := parseAsm(src)
	usesY := map[string]bool{} // the macros with a line that touches a Y register
	touchesY := func(l asmLine) bool {
		if l.text == "" {
			return false
		}
		mn := mnemonic(l.text)
		return yReg.MatchString(l.text) || usesY[mn] || slices.Contains(params[l.macro], mn)
	}
	for changed := true; changed; {
		changed = false
		for _, l := range lines {
			if l.macro != "" && !usesY[l.macro] && touchesY(l) {
				usesY[l.macro], changed = true, true
			}
		}
	}
	var found []finding
	for start, end := 0, 0; start < len(lines); start = end {
		for end = start + 1; end < len(lines) && lines[end].body == lines[start].body; end++ {
		}
		body := lines[start:end]
		if body[0].body == "" || !slices.ContainsFunc(body, touchesY) {
			continue
		}
		for k, l := range body {
			if l.text != "RET" {
				continue
			}
			clean := false
			for j := k; j >= 0 && !clean; j-- {
				b := body[j]
				if j < k && b.text == "VZEROUPPER" {
					clean = true
				} else if b.label || j < k && touchesY(b) {
					break
				}
			}
			if !clean {
				found = append(found, finding{l.n, "RET"})
			}
		}
	}
	return found
}

// TestNoDirtyReturn holds every amd64 assembly file of the module to
// returning with VZEROUPPER done (dirtyingRet).
func TestNoDirtyReturn(t *testing.T) {
	for rel, src := range amd64Files(t) {
		for _, f := range dirtyingRet(src) {
			t.Errorf("%s:%v may return with the Y registers' upper halves in use; VZEROUPPER after the last Y instruction before it", rel, f)
		}
	}
}

// TestDirtyingRetFinds holds dirtyingRet to hand-written functions and
// macros: each return that can leave a Y register's upper half in use is
// found (a label on the RET itself included), and the clean ones, and a
// function without Y registers, are not.
func TestDirtyingRetFinds(t *testing.T) {
	src := `#define DONE \
	VZEROUPPER \
	RET
#define LOAD(r) \
	VMOVDQU (SI), r
#define BAD \
	VMOVDQU (SI), Y0 \
	RET
#define LOOP(STEP) \
	STEP(VADDPS) \
	RET

TEXT ·clean(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
	VZEROUPPER
	MOVQ    AX, ret+0(FP)
	RET

TEXT ·noy(SB), NOSPLIT, $0-8
	VMOVSS a+0(FP), X1
	RET

TEXT ·dirty(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
	RET

TEXT ·label(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
	VZEROUPPER
done:
	RET

TEXT ·viamacro(SB), NOSPLIT, $0-8
	LOAD(Y1)
	RET

TEXT ·macrodone(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
	DONE

TEXT ·retlabel(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
	VZEROUPPER
out:	RET

TEXT ·labelclean(SB), NOSPLIT, $0-8
	VMOVDQU (SI), Y0
done:	VZEROUPPER
	RET
`
	want := []finding{{8, "RET"}, {11, "RET"}, {25, "RET"}, {31, "RET"}, {35, "RET"}, {44, "RET"}}
	if got := dirtyingRet([]byte(src)); !slices.Equal(got, want) {
		t.Errorf("dirtyingRet(hand-written functions) = %v, want %v", got, want)
	}
}

// amd64Files returns every *_amd64.s file of the module, by its path
// from the module root, with its content.
func amd64Files(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
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
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = src
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no *_amd64.s file under %s: the walk is looking in the wrong place", root)
	}
	return files
}

// TestNoLegacySSE holds every amd64 assembly file of the module to the
// package's rule.
func TestNoLegacySSE(t *testing.T) {
	for rel, src := range amd64Files(t) {
		for _, f := range legacySSE(src) {
			t.Errorf("%s:%v names an X register with a legacy SSE mnemonic; write its VEX form (V%s)", rel, f, f.what)
		}
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
	want := []finding{{4, "MOVQ"}, {9, "MOVQ"}, {15, "MOVQ"}, {16, "MOVSD"}, {17, "MOVUPS"}, {19, "MOVQ"}}
	if got := legacySSE([]byte(src)); !slices.Equal(got, want) {
		t.Errorf("legacySSE(hand-written lines) = %v, want %v", got, want)
	}
}
