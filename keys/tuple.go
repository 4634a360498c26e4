package keys

import "strings"

// The tuple encoding maps a list of arbitrary strings to one key such that
// ordinal order of keys equals lexicographic order of the tuples, compared
// component by component and byte by byte.
//
// Each byte of a component becomes a token; tokens are prefix-free and ordered
// like the bytes they stand for, and every component ends with '!', which
// sorts below every token. The output is printable ASCII without / \ # ?, so
// the service accepts it, and UTF-8 byte order and UTF-16 order agree on it:
//
//	0x00-0x23        '"' + two hex digits   (controls, space, ! " #)
//	'&' and '\''     "&0" and "&1"
//	'.' and '/'      ".0" and ".1"
//	'>' and '?'      ">0" and ">1"
//	'[' and '\'      "[0" and "[1"
//	0x7E-0xFF        '~' + two hex digits   (~, DEL, every non-ASCII byte)
//	anything else    itself
//
// Letters, digits and most punctuation stay readable: ("Sales", "000123")
// encodes as "Sales!000123!". The output never holds a single quote, which
// OData key syntax and the SDK's batch requests handle badly.

const tupleEnd = '!'

const hexDigits = "0123456789abcdef"

func tupleTokenLen(c byte) int {
	switch {
	case c <= 0x23 || c >= 0x7E:
		return 3
	case c == '&' || c == '\'' || c == '.' || c == '/' || c == '>' || c == '?' || c == '[' || c == '\\':
		return 2
	}
	return 1
}

func appendTupleToken(b []byte, c byte) []byte {
	switch {
	case c <= 0x23:
		return append(b, '"', hexDigits[c>>4], hexDigits[c&15])
	case c >= 0x7E:
		return append(b, '~', hexDigits[c>>4], hexDigits[c&15])
	case c == '&', c == '.', c == '>', c == '[':
		return append(b, c, '0')
	case c == '\'':
		return append(b, '&', '1')
	case c == '/':
		return append(b, '.', '1')
	case c == '?':
		return append(b, '>', '1')
	case c == '\\':
		return append(b, '[', '1')
	}
	return append(b, c)
}

// EncodeTuple encodes components into one order-preserving key. It fails only
// when the result would exceed the service's key length. The key of a
// tuple's first components starts every key of a tuple that starts with
// them: use it with PrefixRange to read by leading components.
func EncodeTuple(components ...string) (string, error) {
	n := len(components)
	for _, c := range components {
		for i := 0; i < len(c); i++ {
			n += tupleTokenLen(c[i])
		}
	}
	if n > MaxKeyUTF16 {
		return "", invalid("key", strings.Join(components, "\x1f"), ErrTooLong,
			"encoded tuple is "+itoa(n)+" characters, at most 512 allowed")
	}
	b := make([]byte, 0, n)
	for _, c := range components {
		for i := 0; i < len(c); i++ {
			b = appendTupleToken(b, c[i])
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
			if tupleTokenLen(c) != 1 || c < 0x24 {
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
