package hostfuncs

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s as valid UTF-8 without control characters (but
// newline and tab), each bad byte or control character replaced by U+FFFD.
// Guest text that reaches a person — an error message the controller
// writes into a Machine's status, a log message — must not carry terminal
// escape sequences: `kubectl describe` prints status fields as they are.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s { // invalid bytes come as utf8.RuneError
		if isControl(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// HasControl reports whether s holds invalid UTF-8 or any control
// character, newline and tab included: for identifiers (an instance ID, a
// provider ID), which are single-line.
func HasControl(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl)
}

func isControl(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }
