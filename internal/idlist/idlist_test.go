package idlist

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

// TestEncodeIsTheOldFormat pins the stored text: what encoding/json's
// Marshal wrote for a []string before this package existed, HTML escapes
// included, so lists written by either read in the other.
func TestEncodeIsTheOldFormat(t *testing.T) {
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{nil, `[]`},
		{[]string{}, `[]`},
		{[]string{"emp1"}, `["emp1"]`},
		{[]string{"a", "b"}, `["a","b"]`},
		{[]string{`O'Brien`, `x"y\z`, "<&>", "tab\there", "é😀", "\u2028"}, `["O'Brien","x\"y\\z","\u003c\u0026\u003e","tab\there","é😀","\u2028"]`},
	} {
		got, err := Encode(c.ids)
		if err != nil || got != c.want {
			t.Errorf("Encode(%q) = %s, %v; want %s", c.ids, got, err, c.want)
		}
		old, _ := json.Marshal(append([]string{}, c.ids...))
		if got != string(old) {
			t.Errorf("Encode(%q) = %s; json.Marshal wrote %s", c.ids, got, old)
		}
	}
}

// TestDecodeReadsOldLists reads lists as older versions stored them,
// including the "null" an empty list could become, and whitespace.
func TestDecodeReadsOldLists(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{``, nil},
		{`null`, nil},
		{`[]`, []string{}},
		{`["emp1","emp2"]`, []string{"emp1", "emp2"}},
		{` [ "a" , "\u003cb\u003e" ] `, []string{"a", "<b>"}},
		{`["\ud83d\ude00",""]`, []string{"😀", ""}},
	} {
		got, err := Decode(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Decode(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestDecodeMalformed: every malformed list is an error that wraps
// ErrMalformed and says what is wrong, never a partial list.
func TestDecodeMalformed(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{`["a",`, "unexpected end"},
		{`["a"]x`, "after top-level value"},
		{`["a"][]`, "after top-level value"},
		{`{"a":"b"}`, "the list is a JSON object, not an array"},
		{`"a"`, "the list is a JSON string, not an array"},
		{`["a",1]`, "an ID is a JSON number, not a string"},
		{`["a",["b"]]`, "an ID is a JSON array, not a string"},
		{`["a",null]`, "ID 1 is null"},
		{`["a"`, "unexpected end"},
	} {
		got, err := Decode(c.in)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.says) || got != nil {
			t.Errorf("Decode(%s) = %q, %v; want ErrMalformed saying %q", c.in, got, err, c.says)
		}
	}
}

// TestEncodeRefusesInvalidUTF8: JSON would store U+FFFD for the bad byte,
// and the list would name another ID.
func TestEncodeRefusesInvalidUTF8(t *testing.T) {
	_, err := Encode([]string{"ok", "bad\xff"})
	if !errors.Is(err, keys.ErrInvalidUTF8) || !strings.Contains(err.Error(), "ID 1 of the list") {
		t.Fatalf("Encode of invalid UTF-8 = %v; want keys.ErrInvalidUTF8 naming ID 1", err)
	}
}

func TestChunks(t *testing.T) {
	// "😀" is two UTF-16 units: a chunk of 3 units holds "a😀" but not "😀😀".
	got := Chunks("a😀😀b", 3)
	if want := []string{"a😀", "😀b"}; !slices.Equal(got, want) {
		t.Fatalf("Chunks = %q; want %q", got, want)
	}
	if got := Chunks("", 10); got != nil {
		t.Fatalf("Chunks of \"\" = %q; want none", got)
	}
}

// FuzzRoundTrip: any list of valid UTF-8 IDs comes back equal through
// Encode, Chunks (joined) and Decode; any text Decode accepts encodes to a
// list that decodes to the same IDs; Chunks never exceeds its units and
// never cuts a rune.
func FuzzRoundTrip(f *testing.F) {
	f.Add("emp1\x00emp2", 5)
	f.Add("<&>\x00\u2028\x00😀é", 2)
	f.Add(`["a","b"]`, 7)
	f.Add(`null`, 3)
	f.Fuzz(func(t *testing.T, s string, units int) {
		if units < 2 || units > 1<<16 {
			units = 2 + (units&0xff+0xff)%0xff
		}
		if utf8.ValidString(s) {
			ids := strings.Split(s, "\x00")
			enc, err := Encode(ids)
			if err != nil {
				t.Fatalf("Encode(%q): %v", ids, err)
			}
			chunks := Chunks(enc, units)
			for _, c := range chunks {
				if n := utf16Len(c); n > units || !utf8.ValidString(c) {
					t.Fatalf("chunk %q: %d units of %d, valid UTF-8 %v", c, n, units, utf8.ValidString(c))
				}
			}
			got, err := Decode(strings.Join(chunks, ""))
			if err != nil || !slices.Equal(got, ids) {
				t.Fatalf("round trip of %q = %q, %v", ids, got, err)
			}
		}
		if ids, err := Decode(s); err == nil {
			enc, err := Encode(ids)
			if err != nil {
				// Decode turns invalid UTF-8 inside the JSON into U+FFFD,
				// so what it returns always encodes.
				t.Fatalf("Decode(%q) = %q, which does not encode: %v", s, ids, err)
			}
			again, err := Decode(enc)
			if err != nil || !slices.Equal(again, ids) {
				t.Fatalf("Decode(%q) = %q; re-encoded %s decodes to %q, %v", s, ids, enc, again, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("Decode(%q) error %v does not wrap ErrMalformed", s, err)
		}
	})
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}
