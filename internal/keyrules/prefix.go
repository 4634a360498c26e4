package keyrules

import (
	"unicode/utf16"
	"unicode/utf8"
)

// PrefixRange returns the bounds of the keys that start with p, in the
// service's ordinal (UTF-16) order: k starts with p exactly when
// lo <= k < hi, that is `RowKey ge lo and RowKey lt hi`. hi is "" when no
// upper bound is needed (p is empty, or made only of the highest characters).
//
// hi is p with its last UTF-16 code unit incremented, carrying into the
// previous character when that unit is already the highest; where the
// increment would yield a lone surrogate, hi is the first valid character
// after it, so hi is always valid UTF-8 that the service accepts.
func PrefixRange(p string) (lo, hi string) {
	if p == "" {
		return "", ""
	}
	// Common case: the last character's successor is the next code point.
	r, size := utf8.DecodeLastRuneInString(p)
	lowMax := r >= 0x10000 && (r-0x10000)&0x3FF == 0x3FF
	if r != utf8.RuneError && r != 0xFFFF && r != 0xD7FF && !lowMax {
		b := make([]byte, 0, len(p)+1)
		b = append(b, p[:len(p)-size]...)
		return p, unsafeString(utf8.AppendRune(b, r+1))
	}
	u := utf16.Encode([]rune(p))
	for len(u) > 0 {
		last := u[len(u)-1]
		switch {
		case last == 0xFFFF:
			// No higher unit: carry into the previous character.
			u = u[:len(u)-1]
			continue
		case last >= 0xDC00 && last <= 0xDFFF:
			if last < 0xDFFF {
				u[len(u)-1]++
				return p, string(utf16.Decode(u))
			}
			// Low surrogate at its maximum: drop it and bump the high one.
			u = u[:len(u)-1]
			if u[len(u)-1] == 0xDBFF {
				u = u[:len(u)-1]
				continue
			}
			u[len(u)-1]++
			return p, string(utf16.Decode(append(u, 0xDC00)))
		case last == 0xD7FF:
			// The next unit, 0xD800, only starts U+10000 and above.
			u[len(u)-1] = 0xD800
			return p, string(utf16.Decode(append(u, 0xDC00)))
		}
		u[len(u)-1]++
		return p, string(utf16.Decode(u))
	}
	return p, ""
}
