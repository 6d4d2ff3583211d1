// Package statusmsg cuts the messages the controllers write into status
// fields, conditions and Events: they come from providers, and a
// provider is untrusted code whose message may be megabytes long.
package statusmsg

import "unicode/utf8"

// Clip cuts msg to at most max bytes on a rune boundary, ending in "…" if
// it was cut.
func Clip(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	if cut < 0 {
		return ""
	}
	return msg[:cut] + ellipsis
}
