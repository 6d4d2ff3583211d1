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

// PrintableLine is Printable for single-line text (an instance ID, a
// label value): newline and tab are replaced too.
func PrintableLine(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsControl(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }
