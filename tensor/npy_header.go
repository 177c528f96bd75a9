package tensor

import (
	"bytes"
	"fmt"
	"strconv"
)

// npyHeader is the parsed header dictionary.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// parseNpyHeader parses the header dictionary, a Python literal such as
//
//	{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }
//
// followed by padding (spaces and a final newline). It accepts exactly the
// literals numpy writes: single- or double-quoted strings without escapes,
// True/False, and tuples of non-negative decimal integers (an "L" suffix,
// as Python 2 numpy wrote, is allowed). All three keys are required, once.
// Versions 1.0 and 2.0 are latin-1 and 3.0 is UTF-8; the accepted syntax
// is ASCII either way.
func parseNpyHeader(b []byte) (npyHeader, error) {
	var h npyHeader
	p := &literalParser{s: b}
	p.space()
	if !p.eat('{') {
		return h, p.errorf("header is not a dictionary")
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("header key: %w", err)
		}
		if seen[key] {
			return h, p.errorf("header repeats key %q", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return h, p.errorf("header: want ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() == '[' || p.peek() == '{' {
				return h, fmt.Errorf("unsupported descr %s: structured dtypes are not supported", p.raw(60))
			}
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.tuple()
		default:
			return h, p.errorf("header has unexpected key %q", key)
		}
		if err != nil {
			return h, fmt.Errorf("header %s: %w", key, err)
		}
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return h, p.errorf("header: want ',' or '}' after the value of %q", key)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("header is missing key %q", k)
		}
	}
	p.space()
	if p.i != len(p.s) {
		return h, p.errorf("header has trailing bytes after the dictionary")
	}
	return h, nil
}

// literalParser scans the Python literals of a .npy header.
type literalParser struct {
	s []byte
	i int
}

func (p *literalParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s (at header byte %d)", fmt.Sprintf(format, args...), p.i)
}

func (p *literalParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *literalParser) eat(c byte) bool {
	if p.peek() == c && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

func (p *literalParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// raw returns the text from the current position to the end of the
// bracketed literal there (or the end of the header), quoted and cut to at
// most max bytes, for error messages.
func (p *literalParser) raw(max int) string {
	depth, j := 0, p.i
	var quote byte
scan:
	for ; j < len(p.s); j++ {
		c := p.s[j]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(' || c == '{':
			depth++
		case c == ']' || c == ')' || c == '}':
			if depth--; depth == 0 {
				j++
				break scan
			}
		}
	}
	s := string(p.s[p.i:j])
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

func (p *literalParser) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", p.errorf("want a quoted string")
	}
	start := p.i + 1
	end := bytes.IndexByte(p.s[start:], q)
	if end < 0 {
		return "", p.errorf("unterminated string")
	}
	s := p.s[start : start+end]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '\n') >= 0 {
		return "", p.errorf("unsupported string %s", strconv.Quote(string(s)))
	}
	p.i = start + end + 1
	return string(s), nil
}

func (p *literalParser) boolean() (bool, error) {
	rest := p.s[p.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("True")):
		p.i += 4
		return true, nil
	case bytes.HasPrefix(rest, []byte("False")):
		p.i += 5
		return false, nil
	}
	return false, p.errorf("want True or False")
}

// tuple parses "()", "(3,)" or "(2, 3)" (a trailing comma is allowed after
// the last of several elements). "(3)" is not a tuple in Python, and numpy
// rejects it, so it is rejected here too.
func (p *literalParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, p.errorf("want a tuple of integers")
	}
	var dims []int
	for {
		p.space()
		if p.eat(')') {
			if len(dims) == 1 {
				return nil, p.errorf("(%d) is not a tuple: a one-dimensional shape is written (%d,)", dims[0], dims[0])
			}
			return dims, nil
		}
		v, err := p.integer()
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("dimension %d is negative (%d)", len(dims), v)
		}
		dims = append(dims, v)
		p.space()
		if p.eat(',') {
			p.space()
			if p.eat(')') {
				return dims, nil
			}
			continue
		}
		if p.eat(')') {
			if len(dims) == 1 {
				return nil, p.errorf("(%d) is not a tuple: a one-dimensional shape is written (%d,)", dims[0], dims[0])
			}
			return dims, nil
		}
		return nil, p.errorf("want ',' or ')' in the shape tuple")
	}
}

// integer parses an optionally negative decimal integer with an optional
// Python 2 "L" suffix.
func (p *literalParser) integer() (int, error) {
	start := p.i
	if p.peek() == '-' || p.peek() == '+' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == digits {
		return 0, p.errorf("want an integer")
	}
	text := string(p.s[start:p.i])
	if p.peek() == 'L' {
		p.i++
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, p.errorf("dimension %s is out of range", text)
	}
	return v, nil
}
