package guesttext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                "plain",
		"two\nlines\ttab":      "two\nlines\ttab",
		"\x1b[31mred\x1b[0m":   "\uFFFD[31mred\uFFFD[0m",
		"bell\a\x00nul\x7fdel": "bell\uFFFD\uFFFDnul\uFFFDdel",
		"c1 \u009b6n":          "c1 \uFFFD6n",
		"bad \xff utf-8":       "bad \uFFFD utf-8",
		"rtl \u202egnp.exe":    "rtl \uFFFDgnp.exe",
		"zero\u200bwidth":      "zero\uFFFDwidth",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"hcloud://42": "hcloud://42", "a\nb\tc": "a\uFFFDb\uFFFDc", "\x1b": "\uFFFD", "\xff": "\uFFFD", "é": "é"} {
		if got := PrintableLine(in); got != want {
			t.Errorf("PrintableLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// A bound counts the bytes after replacement: 100 NULs become 300 bytes
// of U+FFFD, cut to the bound on a rune boundary with the ellipsis.
func TestClipCountsReplacedBytes(t *testing.T) {
	in := strings.Repeat("\x00", 100)
	for _, max := range []int{0, 2, 3, 10, 100, 299, 300} {
		got := ClipPrintable(in, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Errorf("ClipPrintable(100 NULs, %d) = %d bytes, valid UTF-8 %v", max, len(got), utf8.ValidString(got))
		}
		if max >= len(Ellipsis) && max < 300 && !strings.HasSuffix(got, Ellipsis) {
			t.Errorf("ClipPrintable(100 NULs, %d) = %q: a cut text ends with %q", max, got, Ellipsis)
		}
	}
	if got := ClipPrintable(in, 300); got != strings.Repeat("\uFFFD", 100) {
		t.Errorf("ClipPrintable at exactly the replaced length cut it: %q", got)
	}
	if got := ClipPrintableLine("a\nb", 10); got != "a\uFFFDb" {
		t.Errorf("ClipPrintableLine = %q", got)
	}
}

func TestEscapedLen(t *testing.T) {
	for in, want := range map[string]int{"": 0, "abc": 3, `a"b`: 4, `a\b`: 4, "a\nb\t": 6, "é": 2} {
		if got := EscapedLen(in); got != want {
			t.Errorf("EscapedLen(%q) = %d, want %d", in, got, want)
		}
	}
}
