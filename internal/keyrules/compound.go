package keyrules

import "strings"

// defaultSeparator joins compound key components, as in the guide's
// "000123_2012" (employee id, then year).
const defaultSeparator = "_"

// Compound joins and splits compound keys with a fixed separator. The zero
// value uses "_". A component that contains the separator is
// refused rather than silently producing a key that splits differently; use
// EncodeTuple for components that may contain anything.
type Compound struct {
	// Sep separates components. Default: "_", as in the guide's
	// "000123_2012" (employee id, then year).
	Sep string
}

func (c Compound) sep() string {
	if c.Sep == "" {
		return defaultSeparator
	}
	return c.Sep
}

// Join builds a key from its components.
func (c Compound) Join(parts ...string) (string, error) {
	sep := c.sep()
	if err := checkKeyChars("key component", sep); err != nil {
		return "", err
	}
	n := len(sep) * (len(parts) - 1)
	for _, p := range parts {
		if i := strings.Index(p, sep); i >= 0 {
			return "", invalidAt("key component", p, ErrForbiddenChar, i, []rune(sep)[0], "contains the separator "+sep)
		}
		if err := checkKeyChars("key component", p); err != nil {
			return "", err
		}
		n += len(p)
	}
	if len(parts) == 0 {
		return "", invalid("key", "", ErrEmpty, "a compound key needs at least one component")
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p)
	}
	k := b.String()
	if UTF16Len(k) > MaxKeyUTF16 {
		return "", invalid("key", k, ErrTooLong, "at most 512 UTF-16 code units (1 KiB)")
	}
	return k, nil
}

// Split returns the components of key. It is the inverse of Join.
func (c Compound) Split(key string) []string { return strings.Split(key, c.sep()) }

// SplitN splits key into exactly n components, or fails.
func (c Compound) SplitN(key string, n int) ([]string, error) {
	parts := strings.Split(key, c.sep())
	if len(parts) != n {
		return nil, invalid("key", key, ErrBadSyntax, "want "+itoa(n)+" components separated by "+c.sep()+", got "+itoa(len(parts)))
	}
	return parts, nil
}

// Prefix is the key prefix shared by every key whose first components are
// parts: Join(parts...) followed by the separator. Use it with PrefixRange to
// read every row under those components.
func (c Compound) Prefix(parts ...string) (string, error) {
	k, err := c.Join(parts...)
	if err != nil {
		return "", err
	}
	return k + c.sep(), nil
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
