package keyrules

import (
	"math"
	"strconv"
	"unsafe"
)

// Widths of the fixed-width number encodings.
const (
	// Uint64Width digits hold every uint64 (18446744073709551615).
	Uint64Width = 20
	// Int64Width characters hold every int64: a sign character, then 19 digits.
	Int64Width = 20
)

func padUint(u uint64, width int) string {
	var b [Uint64Width]byte
	return string(appendPadded(b[:0], u, width))
}

// appendPadded appends the last width decimal digits of u, zero-padded.
func appendPadded(b []byte, u uint64, width int) []byte {
	n := len(b)
	for i := 0; i < width; i++ {
		b = append(b, '0')
	}
	for i := n + width - 1; i >= n; i-- {
		b[i] = byte('0' + u%10)
		u /= 10
	}
	return b
}

// unsafeString turns a freshly built byte slice that nothing else refers to
// into a string without copying it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func digits(u uint64) int {
	n := 1
	for u >= 10 {
		u /= 10
		n++
	}
	return n
}

// Uint64 formats n as 20 zero-padded digits, so string order equals numeric order.
func Uint64(n uint64) string { return padUint(n, Uint64Width) }

// FixedUint formats n as exactly width zero-padded digits (the guide's
// "000123"), failing when n does not fit. width is 1 to 20.
func FixedUint(n uint64, width int) (string, error) {
	if width < 1 || width > Uint64Width {
		return "", invalid("key", itoa(width), ErrOutOfRange, "width is 1 to 20")
	}
	if digits(n) > width {
		return "", invalid("key", strconv.FormatUint(n, 10), ErrOutOfRange, "does not fit in "+itoa(width)+" digits")
	}
	return padUint(n, width), nil
}

// Int64 formats n in 20 characters such that string order equals numeric
// order, negatives included: "0" and 19 digits for n >= 0, "-" and the 19
// digits of n + 2^63 for n < 0 ('-' sorts before '0').
func Int64(n int64) string {
	var b [Int64Width]byte
	var u uint64
	if n < 0 {
		b[0] = '-'
		u = uint64(n) + 1<<63 // n + 2^63, in [0, 2^63)
	} else {
		b[0] = '0'
		u = uint64(n)
	}
	for i := Int64Width - 1; i >= 1; i-- {
		b[i] = byte('0' + u%10)
		u /= 10
	}
	return string(b[:])
}

// DescUint64 formats n so that larger numbers sort first.
func DescUint64(n uint64) string { return Uint64(math.MaxUint64 - n) }

// DescInt64 formats n so that larger numbers sort first.
func DescInt64(n int64) string { return Int64(^n) }

func parseDigits(what, s string, width int) (uint64, error) {
	if len(s) != width {
		return 0, invalid("key", s, ErrBadSyntax, what+" has exactly "+itoa(width)+" characters")
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, invalidAt("key", s, ErrBadSyntax, i, rune(c), what+" is digits")
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, invalid("key", s, ErrOutOfRange, what)
		}
		u = u*10 + d
	}
	return u, nil
}

// ParseUint64 inverts Uint64 (and FixedUint when given its width).
func ParseUint64(s string) (uint64, error) {
	return parseDigits("a fixed-width uint64", s, Uint64Width)
}

// ParseFixedUint inverts FixedUint.
func ParseFixedUint(s string, width int) (uint64, error) {
	return parseDigits("a fixed-width number", s, width)
}

// ParseInt64 inverts Int64.
func ParseInt64(s string) (int64, error) {
	if len(s) != Int64Width || (s[0] != '0' && s[0] != '-') {
		return 0, invalid("key", s, ErrBadSyntax, "an Int64 key is '0' or '-' and 19 digits")
	}
	u, err := parseDigits("an Int64 key", s[1:], Int64Width-1)
	if err != nil {
		return 0, err
	}
	if u >= 1<<63 {
		return 0, invalid("key", s, ErrOutOfRange, "an Int64 key")
	}
	if s[0] == '-' {
		return int64(u - 1<<63), nil
	}
	return int64(u), nil
}

// ParseDescUint64 inverts DescUint64.
func ParseDescUint64(s string) (uint64, error) {
	u, err := ParseUint64(s)
	return math.MaxUint64 - u, err
}

// ParseDescInt64 inverts DescInt64.
func ParseDescInt64(s string) (int64, error) {
	n, err := ParseInt64(s)
	return ^n, err
}
