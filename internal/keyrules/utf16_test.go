package keyrules

import (
	"errors"
	"testing"
)

// UTF16Len counts what the service counts: one unit below U+10000 (U+FFFF
// included), two from U+10000 on (a surrogate pair), one per invalid byte.
func TestUTF16LenAtThePlaneBoundary(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"\uffff", 1},
		{"\U00010000", 2},
		{"a\xffb", 3},
	} {
		if got := UTF16Len(tc.s); got != tc.want {
			t.Errorf("UTF16Len(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// A property name with a byte that is no UTF-8 is ErrInvalidUTF8; the
// replacement character itself, well encoded, is a forbidden character.
func TestPropertyNameInvalidUTF8IsNamed(t *testing.T) {
	if err := ValidatePropertyName("ab\xff"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("ValidatePropertyName(%q) = %v, want ErrInvalidUTF8", "ab\xff", err)
	}
	if err := ValidatePropertyName("ab\uFFFD"); !errors.Is(err, ErrForbiddenChar) || errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("ValidatePropertyName(%q) = %v, want ErrForbiddenChar only", "ab\uFFFD", err)
	}
}
