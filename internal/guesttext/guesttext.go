// Package guesttext makes text a guest wrote safe to show a person: an
// error message the controller writes into a Machine's status, a log
// record, an instance name or a metric label. The host functions apply it
// to what guests hand them; the runtime to the documents guests return;
// the controllers to what they write into a resource's status.
package guesttext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Guest text that reaches a person — an error message the controller
// writes into a Machine's status, a log message, an instance name — must
// not carry terminal escape sequences (`kubectl describe` prints status
// fields as they are) nor characters that change how the text around them
// is shown: bidirectional overrides ("Trojan source"), zero-width and
// other format characters, line and paragraph separators. Only printable
// characters (unicode.IsPrint: letters, marks, numbers, punctuation,
// symbols and the ASCII space) are kept, and newline and tab in text of
// several lines; every other rune and every byte that is not UTF-8 becomes
// U+FFFD.
//
// Replacing can make text longer (one invalid byte becomes the three of
// U+FFFD), so every bound on guest text counts the bytes after this
// replacement — the bytes that reach the log handler or the Kubernetes
// object — never the guest's raw bytes: ClipPrintable cuts the replaced
// text, and EscapedLen is what a log quota charges.

// Printable returns s made printable; newline and tab are kept.
func Printable(s string) string { return printable(s, true, -1) }

// PrintableLine is Printable for single-line text (an instance ID, a
// label value): newline and tab are replaced too.
func PrintableLine(s string) string { return printable(s, false, -1) }

// ClipPrintable is Printable cut to at most max bytes of output, on a rune
// boundary; text that was cut ends with "…" (within max).
func ClipPrintable(s string, max int) string { return printable(s, true, max) }

// ClipPrintableLine is PrintableLine cut like ClipPrintable.
func ClipPrintableLine(s string, max int) string { return printable(s, false, max) }

// Ellipsis marks text the host cut.
const Ellipsis = "…"

func printable(s string, multiline bool, max int) string {
	keep := isPrintableLine
	if multiline {
		keep = isPrintable
	}
	if (max < 0 || len(s) <= max) && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !keep(r) }) {
		return s
	}
	size := len(s)
	if max >= 0 {
		size = min(size, max)
	}
	var b strings.Builder
	b.Grow(size)
	for _, r := range s { // invalid bytes come as utf8.RuneError
		if !keep(r) {
			r = utf8.RuneError
		}
		if max >= 0 && b.Len()+utf8.RuneLen(r) > max {
			return clipped(b.String(), max)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clipped cuts out so that it ends with Ellipsis within max bytes.
func clipped(out string, max int) string {
	if max < len(Ellipsis) {
		return ""
	}
	cut := min(len(out), max-len(Ellipsis))
	for cut > 0 && cut < len(out) && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + Ellipsis
}

func isPrintable(r rune) bool     { return r == '\n' || r == '\t' || unicode.IsPrint(r) }
func isPrintableLine(r rune) bool { return unicode.IsPrint(r) } // U+FFFD is printable (So)

// EscapedLen is the length of s, already printable, as slog's JSON
// handler writes it inside its quotes — the most any of slog's handlers
// writes for it: the one escape either applies to printable text is a
// backslash before '"' and '\\', and "\n" and "\t" for newline and tab.
func EscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '\n', '\t':
			n++
		}
	}
	return n
}
