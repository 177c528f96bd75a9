package backend

import (
	"fmt"
	"strings"
)

// SplitCommandLine splits s into words the way a POSIX shell does, without
// running one: words are separated by unquoted blanks (space, tab,
// newline); single quotes keep everything up to the next single quote
// literally; inside double quotes a backslash escapes only $ ` " \ and
// newline; outside quotes a backslash escapes any character
// (backslash-newline is removed). Quotes may join parts of one word
// (a'b c'd is one word "ab cd"), and "" is an empty word. There is no
// expansion of any kind. An unterminated quote, a trailing backslash or
// an empty command is an error wrapping ErrCommandLine.
func SplitCommandLine(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrCommandLine, s, fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, bad("unterminated single quote at byte %d", i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			start := i
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(d)
			}
			if !closed {
				return nil, bad("unterminated double quote at byte %d", start)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, bad("trailing backslash")
			}
			i++
			if s[i] == '\n' {
				continue // line continuation
			}
			inWord = true
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, bad("no command")
	}
	if words[0] == "" {
		return nil, bad("empty command name")
	}
	return words, nil
}
