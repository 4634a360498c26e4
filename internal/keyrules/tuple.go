package keyrules

import (
	"strings"

	"github.com/tablekit/tablekit/internal/tuple"
)

// The tuple encoding maps a list of arbitrary strings to one key such that
// ordinal order of keys equals lexicographic order of the tuples, compared
// component by component and byte by byte. Its tokens are defined in
// internal/tuple, which also encodes tuples longer than a key for the
// properties that hold them.

const tupleEnd = tuple.End

// EncodeTuple encodes components into one order-preserving key. It fails only
// when the result would exceed the service's key length. The key of a
// tuple's first components starts every key of a tuple that starts with
// them: use it with PrefixRange to read by leading components.
func EncodeTuple(components ...string) (string, error) {
	n := tuple.Len(components...)
	if n > MaxKeyUTF16 {
		return "", invalid("key", strings.Join(components, "\x1f"), ErrTooLong,
			"encoded tuple is "+itoa(n)+" characters, at most 512 allowed")
	}
	b := make([]byte, 0, n)
	for _, c := range components {
		for i := 0; i < len(c); i++ {
			b = tuple.AppendToken(b, c[i])
		}
		b = append(b, tupleEnd)
	}
	return unsafeString(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// DecodeTuple inverts EncodeTuple.
func DecodeTuple(key string) ([]string, error) {
	var out []string
	var cur []byte
	bad := func(i int) error {
		return invalidAt("key", key, ErrBadSyntax, i, rune(key[i]), "not a tuple encoding")
	}
	for i := 0; i < len(key); {
		c := key[i]
		switch c {
		case tupleEnd:
			out = append(out, string(cur))
			cur = cur[:0]
			i++
		case '"', '~':
			if i+2 >= len(key) {
				return nil, bad(i)
			}
			h, ok1 := unhex(key[i+1])
			l, ok2 := unhex(key[i+2])
			v := h<<4 | l
			if !ok1 || !ok2 || (c == '"' && v > 0x23) || (c == '~' && v < 0x7E) {
				return nil, bad(i)
			}
			cur = append(cur, v)
			i += 3
		case '&', '.', '>', '[':
			if i+1 >= len(key) || (key[i+1] != '0' && key[i+1] != '1') {
				return nil, bad(i)
			}
			cur = append(cur, c+key[i+1]-'0')
			i += 2
		default:
			if tuple.TokenLen(c) != 1 || c < 0x24 {
				return nil, bad(i)
			}
			cur = append(cur, c)
			i++
		}
	}
	if len(cur) > 0 || (len(key) > 0 && key[len(key)-1] != tupleEnd) {
		return nil, invalid("key", key, ErrBadSyntax, "a tuple encoding ends with '!'")
	}
	return out, nil
}
