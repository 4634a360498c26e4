// Package tuple is the order-preserving tuple encoding behind
// keys.EncodeTuple, without the bound of a key's length: tablekit also
// stores tuples where no key length applies, as the reference an index
// row keeps to its primary (property values up to 32,768 UTF-16 units),
// so a primary whose two keys are each valid is always referable.
//
// Each byte of a component becomes a token; tokens are prefix-free and
// ordered like the bytes they stand for, and every component ends with
// '!', which sorts below every token. The output is printable ASCII
// without / \ # ?, so the service accepts it, and UTF-8 byte order and
// UTF-16 order agree on it:
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
package tuple

// End ends every component.
const End = '!'

const hexDigits = "0123456789abcdef"

// TokenLen is the length of byte c's token.
func TokenLen(c byte) int {
	switch {
	case c <= 0x23 || c >= 0x7E:
		return 3
	case c == '&' || c == '\'' || c == '.' || c == '/' || c == '>' || c == '?' || c == '[' || c == '\\':
		return 2
	}
	return 1
}

// AppendToken appends byte c's token to b.
func AppendToken(b []byte, c byte) []byte {
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

// Len is the length of the encoding of components.
func Len(components ...string) int {
	n := len(components)
	for _, c := range components {
		for i := 0; i < len(c); i++ {
			n += TokenLen(c[i])
		}
	}
	return n
}

// Encode encodes components, of any length.
func Encode(components ...string) string {
	b := make([]byte, 0, Len(components...))
	for _, c := range components {
		for i := 0; i < len(c); i++ {
			b = AppendToken(b, c[i])
		}
		b = append(b, End)
	}
	return string(b)
}
