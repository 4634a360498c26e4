package table

import (
	"encoding/json"
	"testing"
)

// unquoteByJSON is what unquote must answer for a literal: encoding/json's
// reading of it, or its raw contents when encoding/json refuses it.
func unquoteByJSON(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw[1 : len(raw)-1])
	}
	return s
}

var unquoteSeeds = []string{
	``,
	`plain`,
	`W/\"datetime'2026-11-21T21%3A15%3A46.9047177Z'\"`,
	`a\\b\/c`,
	`\b\f\n\r\t`,
	`\"`,
	`\\\"\\`,
	`x\u00e9y`,
	`\ud83d\ude00 and \u0041`,
	`\ud83d alone`,
	`bad \x escape`,
	`café \"quoted\"`,
	"\xff\xfe \\\" invalid UTF-8",
	"tab\there \\n",
	`ends in \\`,
}

// The fast path of unquote answers as encoding/json does for every
// literal the scanner delimits: escapes undone, \u escapes and surrogate
// pairs decoded, invalid UTF-8 and control bytes as encoding/json treats
// them.
func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	for _, s := range unquoteSeeds {
		raw := []byte(`"` + s + `"`)
		if end, ok := stringEnd(raw, 0); !ok || end != len(raw) {
			t.Fatalf("seed %q is not one literal", s)
		}
		if got, want := unquote(raw), unquoteByJSON(raw); got != want {
			t.Errorf("unquote(%s) = %q, encoding/json: %q", raw, got, want)
		}
	}
	// The ETag every entity carries takes the fast path: no allocation
	// besides the result.
	etag := []byte(`"` + unquoteSeeds[2] + `"`)
	if n := testing.AllocsPerRun(100, func() { _ = unquote(etag) }); n > 1 {
		t.Errorf("unquote of an ETag: %v allocations, want 1", n)
	}
}

func FuzzUnquoteMatchesEncodingJSON(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(`"` + s + `"`)
		if end, ok := stringEnd(raw, 0); !ok || end != len(raw) {
			return // not one literal: the scanner never hands unquote such bytes
		}
		if got, want := unquote(raw), unquoteByJSON(raw); got != want {
			t.Errorf("unquote(%q) = %q, encoding/json: %q", raw, got, want)
		}
	})
}
