package keyrules

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func FuzzTupleOrderAndRoundTrip(f *testing.F) {
	f.Add("Sales", "000123", "Sales", "000152")
	f.Add("a", "", "a\x00", "")
	f.Add("a/b", "?", "a.b", "#")
	f.Add("é", "😀", "\uffff", "~")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		a, b := []string{a1, a2}, []string{b1, b2}
		ka, err1 := EncodeTuple(a...)
		kb, err2 := EncodeTuple(b...)
		if err1 != nil || err2 != nil {
			return // too long for a key
		}
		if err := ValidateRowKey(ka); err != nil || strings.ContainsRune(ka, '\'') {
			t.Fatalf("encoding %q of %q is not a valid, quote-free key: %v", ka, a, err)
		}
		want := slices.Compare(a, b)
		if got := strings.Compare(ka, kb); got != want {
			t.Fatalf("order of %q vs %q is %d, encodings %q vs %q give %d", a, b, want, ka, kb, got)
		}
		if got := Compare(ka, kb); got != want {
			t.Fatalf("service order disagrees for %q vs %q", ka, kb)
		}
		back, err := DecodeTuple(ka)
		if err != nil || !slices.Equal(back, a) {
			t.Fatalf("round trip of %q: %q, %v", a, back, err)
		}
	})
}

func FuzzIntegerOrder(f *testing.F) {
	f.Add(int64(-1), int64(0))
	f.Add(int64(-9223372036854775808), int64(9223372036854775807))
	f.Add(int64(10), int64(9))
	f.Fuzz(func(t *testing.T, a, b int64) {
		cmp := func(x, y int64) int {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
		want := cmp(a, b)
		if got := strings.Compare(Int64(a), Int64(b)); got != want {
			t.Fatalf("Int64 order %d %d", a, b)
		}
		if got := strings.Compare(DescInt64(a), DescInt64(b)); got != -want {
			t.Fatalf("DescInt64 order %d %d", a, b)
		}
		ua, ub := uint64(a), uint64(b)
		uw := 0
		if ua < ub {
			uw = -1
		} else if ua > ub {
			uw = 1
		}
		if got := strings.Compare(Uint64(ua), Uint64(ub)); got != uw {
			t.Fatalf("Uint64 order %d %d", ua, ub)
		}
		if got := strings.Compare(DescUint64(ua), DescUint64(ub)); got != -uw {
			t.Fatalf("DescUint64 order %d %d", ua, ub)
		}
		if n, err := ParseInt64(Int64(a)); err != nil || n != a {
			t.Fatalf("Int64 round trip %d", a)
		}
		if n, err := ParseUint64(Uint64(ua)); err != nil || n != ua {
			t.Fatalf("Uint64 round trip %d", ua)
		}
	})
}

func FuzzInvertedTicks(f *testing.F) {
	f.Add(int64(0), int64(1))
	f.Add(int64(-62135596800), int64(253402300799))
	f.Add(int64(1325376000), int64(1325376000))
	f.Fuzz(func(t *testing.T, s1, s2 int64) {
		// Spread fuzzed seconds over .NET's range, with sub-second noise.
		span := int64(253402300799 + 62135596800)
		norm := func(s int64) time.Time {
			sec := ((s % span) + span) % span
			return time.Unix(sec-62135596800, (s&0xffffff)*59%1e9).UTC()
		}
		a, b := norm(s1), norm(s2)
		ka, kb := InvertedTicks(a), InvertedTicks(b)
		ta, tb := a.Truncate(100), b.Truncate(100)
		switch {
		case ta.Before(tb) && !(ka > kb), ta.After(tb) && !(ka < kb), ta.Equal(tb) && ka != kb:
			t.Fatalf("order: %v %v -> %s %s", a, b, ka, kb)
		}
		back, err := ParseInvertedTicks(ka)
		if err != nil || !back.Equal(ta) {
			t.Fatalf("round trip %v: %v %v", a, back, err)
		}
	})
}

func FuzzPrefixRange(f *testing.F) {
	f.Add("empid_", "empid_000123")
	f.Add("a\uffff", "b")
	f.Add("x\U0010FFFF", "x\U0010FFFF\U0010FFFF")
	f.Add("x\ud7ff", "x\U00010000")
	f.Add("x\U0001F7FF", "x\U0001F800")
	f.Fuzz(func(t *testing.T, p, k string) {
		if !isValidUTF8(p) || !isValidUTF8(k) {
			return
		}
		lo, hi := PrefixRange(p)
		in := inPrefixRange(k, lo, hi)
		if in != strings.HasPrefix(k, p) {
			t.Fatalf("prefix %q key %q: range [%q, %q) says %v", p, k, lo, hi, in)
		}
		if hi != "" && !isValidUTF8(hi) {
			t.Fatalf("hi %q is not valid UTF-8", hi)
		}
	})
}

func isValidUTF8(s string) bool {
	for _, r := range s {
		if r == 0xFFFD {
			return !strings.Contains(s, "\xff") && strings.ToValidUTF8(s, "") == s
		}
	}
	return strings.ToValidUTF8(s, "") == s
}

// inPrefixRange reports whether k lies in [lo, hi) by the service's order,
// with hi == "" meaning no upper bound.
func inPrefixRange(k, lo, hi string) bool {
	return Compare(k, lo) >= 0 && (hi == "" || Compare(k, hi) < 0)
}
