package keyrules

import (
	"unicode/utf8"
)

// Compare orders keys the way the service does: ordinally, by UTF-16 code
// unit. It agrees with Go's < on strings except where a character above
// U+FFFF meets one in U+E000-U+FFFF: UTF-16 puts the former first.
func Compare(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1
		case len(a) > len(b):
			return 1
		}
		return 0
	}
	// Back up to the start of the rune in which they differ.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := firstUnit(ra), firstUnit(rb)
	if ua == ub { // both above U+FFFF with the same high surrogate
		ua, ub = uint32(ra), uint32(rb)
	}
	if ua < ub {
		return -1
	}
	return 1
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) uint32 {
	if r >= 0x10000 {
		return 0xD800 + (uint32(r-0x10000) >> 10)
	}
	return uint32(r)
}
