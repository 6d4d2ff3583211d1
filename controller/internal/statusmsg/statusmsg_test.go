package statusmsg

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{strings.Repeat("é", 10), 10, "ééé…"}, // 2-byte runes: the cut (7) backs up to a rune start (6)
		{"abc", 2, ""},                        // no room even for the ellipsis
	} {
		got := Clip(tc.msg, tc.max)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.msg, tc.max, got, tc.want)
		}
		if len(got) > tc.max || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.msg, tc.max, got, len(got), utf8.ValidString(got))
		}
	}
}
