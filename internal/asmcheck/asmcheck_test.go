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
	lines, params := parseAsm(src)
	var found []string
	for _, l := range lines {
		text := l.text
		// A label may share the line with an instruction.
		if i := strings.Index(text, ":"); i >= 0 && !strings.ContainsAny(text[:i], " \t(") {
			text = strings.TrimSpace(text[i+1:])
		}
		if text == "" {
			continue
		}
		mn := strings.Fields(text)[0]
		operands := strings.TrimSpace(strings.TrimPrefix(text, mn))
		switch {
		case strings.HasPrefix(mn, "#"), strings.Contains(mn, "("), slices.Contains(params[l.macro], mn):
		case strings.HasPrefix(mn, "V"):
		case xReg.MatchString(operands):
			found = append(found, strconv.Itoa(l.n)+": "+mn)
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

// yReg matches an operand that names a Y register.
var yReg = regexp.MustCompile(`(^|[\s,(])Y([0-9]|[12][0-9]|3[01])($|[\s,)])`)

// asmLine is one instruction, label or directive of an assembly file,
// its comment and line continuation removed.
type asmLine struct {
	n     int    // line number, from 1
	text  string // trimmed
	macro string // the #define it belongs to, if any
}

// parseAsm returns src's lines with text, and the parameters of each
// macro it defines.
func parseAsm(src []byte) (lines []asmLine, params map[string][]string) {
	params = map[string][]string{}
	macro := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		cont := strings.HasSuffix(line, `\`)
		line = strings.TrimSpace(strings.TrimSuffix(line, `\`))
		if rest, ok := strings.CutPrefix(line, "#define"); ok && strings.TrimSpace(rest) != "" {
			macro = mnemonic(rest)
			params[macro] = macroParams(rest)
			line = ""
		}
		if line != "" {
			lines = append(lines, asmLine{n: n, text: line, macro: macro})
		}
		if !cont {
			macro = ""
		}
	}
	return lines, params
}

// mnemonic returns a line's first word up to any "(": an instruction,
// a macro's name, or a macro parameter in the mnemonic's place.
func mnemonic(text string) string {
	name := strings.Fields(text)[0]
	if i := strings.Index(name, "("); i >= 0 {
		name = name[:i]
	}
	return name
}

// invokes returns the macro a line invokes ("NAME(...)" or a bare NAME
// that is a macro), or "".
func invokes(text string, params map[string][]string) string {
	name := mnemonic(text)
	if _, ok := params[name]; ok {
		return name
	}
	return ""
}

// dirtyingRet returns a finding ("line: RET") for each RET of the amd64
// assembly src that may return with the upper halves of the Y registers
// in use: in a function or macro that names a Y register (itself or
// through a macro it invokes; for a macro, also one that runs an
// instruction or macro its caller passes in), a RET whose instructions
// before it, back to the nearest VZEROUPPER, name a Y register, invoke
// such a macro or a passed-in one, or hold a label (a jump may arrive there from before the VZEROUPPER).
// Returning dirty costs the caller's Go code, which is all legacy SSE,
// the state switch at its first floating-point instruction. A RET inside
// a macro is checked within the macro's body.
func dirtyingRet(src []byte) []string {
	lines, params := parseAsm(src)
	// usesY: the macros that name a Y register, directly or by invoking one.
	usesY := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, l := range lines {
			if l.macro == "" || usesY[l.macro] {
				continue
			}
			if yReg.MatchString(l.text) || usesY[invokes(l.text, params)] {
				usesY[l.macro], changed = true, true
			}
		}
	}
	var found []string
	// Group the lines into bodies: each macro's, and each TEXT's.
	start := 0
	for i := 0; i <= len(lines); i++ {
		end := i == len(lines) || strings.HasPrefix(lines[i].text, "TEXT") ||
			(i > 0 && lines[i].macro != lines[i-1].macro)
		if !end {
			continue
		}
		body := lines[start:i]
		start = i
		dirty := false
		for _, l := range body {
			dirty = dirty || yReg.MatchString(l.text) || usesY[invokes(l.text, params)] ||
				slices.Contains(params[l.macro], mnemonic(l.text)) // an instruction or macro the caller passes in
		}
		if !dirty {
			continue
		}
		for k, l := range body {
			if l.text != "RET" {
				continue
			}
			clean := false
			for j := k - 1; j >= 0; j-- {
				b := body[j].text
				if b == "VZEROUPPER" {
					clean = true
					break
				}
				if yReg.MatchString(b) || usesY[invokes(b, params)] || slices.Contains(params[body[j].macro], mnemonic(b)) ||
					strings.HasSuffix(b, ":") || strings.HasPrefix(b, "TEXT") {
					break
				}
			}
			if !clean {
				found = append(found, strconv.Itoa(l.n)+": RET")
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
			t.Errorf("%s:%s may return with the Y registers' upper halves in use; VZEROUPPER after the last Y instruction before it", rel, f)
		}
	}
}

// TestDirtyingRetFinds holds dirtyingRet to hand-written functions and
// macros: each return that can leave a Y register's upper half in use is
// found, and the clean ones, and a function without Y registers, are not.
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
`
	want := []string{"8: RET", "11: RET", "25: RET", "31: RET", "35: RET"}
	if got := dirtyingRet([]byte(src)); !slices.Equal(got, want) {
		t.Errorf("dirtyingRet(hand-written functions) = %q, want %q", got, want)
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
			t.Errorf("%s:%s names an X register with a legacy SSE mnemonic; write its VEX form (V%s)",
				rel, f, f[strings.LastIndex(f, " ")+1:])
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
	want := []string{"4: MOVQ", "9: MOVQ", "15: MOVQ", "16: MOVSD", "17: MOVUPS", "19: MOVQ"}
	if got := legacySSE([]byte(src)); !slices.Equal(got, want) {
		t.Errorf("legacySSE(hand-written lines) = %q, want %q", got, want)
	}
}
