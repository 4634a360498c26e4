// Package idlist is the stored format of the index-entity patterns' ID
// lists: the value → IDs lists that patterns.IndexEntities and
// patterns.RemoteIndexEntities keep in string properties and
// patterns.BlobIndex keeps in a blob.
//
// A list is a JSON array of strings, byte for byte what encoding/json's
// Marshal writes for a []string ("<", ">" and "&" escaped as \u003c,
// \u003e, \u0026). Lists written before this package existed were written
// by that Marshal, so they read here unchanged, and lists written here read
// in older versions. The format lives in this package, below patterns, so
// that patterns handles lists of IDs and never JSON.
//
// In an entity, one list is cut over several string properties, each
// holding at most the service's 32 K UTF-16 units (Chunks), and joined back
// in property order before Decode.
package idlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/tablekit/tablekit/keys"
)

// ErrMalformed is in the chain of every Decode error: the stored text is
// not a JSON array of strings.
var ErrMalformed = errors.New("idlist: malformed ID list")

// CheckID is nil when id can be stored in a list. An ID that is not valid
// UTF-8 cannot: JSON would store U+FFFD in its place, and the list would
// name another ID. The error wraps keys.ErrInvalidUTF8, as the key
// validators' do; callers check before any request.
func CheckID(id string) error {
	if !utf8.ValidString(id) {
		return fmt.Errorf("idlist: ID %q: %w", id, keys.ErrInvalidUTF8)
	}
	return nil
}

// Encode is the stored text of ids. A nil or empty ids is "[]".
func Encode(ids []string) (string, error) {
	for i, id := range ids {
		if err := CheckID(id); err != nil {
			return "", fmt.Errorf("ID %d of the list: %w", i, err)
		}
	}
	if ids == nil {
		ids = []string{}
	}
	// Marshal of a []string of valid UTF-8 cannot fail.
	b, err := json.Marshal(ids)
	if err != nil {
		return "", fmt.Errorf("idlist: %w", err)
	}
	return string(b), nil
}

// Decode is the list stored as s. "" and "null" (which an older writer
// could leave for an empty list) are the empty list. Anything else must be
// one JSON array of strings with nothing after it; the error then wraps
// ErrMalformed and says at which byte and why.
func Decode(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	// Pointers tell a null element, which no writer stores, from "".
	var ptrs []*string
	err := json.Unmarshal([]byte(s), &ptrs)
	if err == nil {
		if ptrs == nil {
			return nil, nil // "null"
		}
		ids := make([]string, len(ptrs))
		for i, p := range ptrs {
			if p == nil {
				return nil, fmt.Errorf("%w: ID %d is null, not a string", ErrMalformed, i)
			}
			ids[i] = *p
		}
		return ids, nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return nil, fmt.Errorf("%w: byte %d: %s", ErrMalformed, syn.Offset, syn.Error())
	case errors.As(err, &typ) && typ.Type.Kind() == reflect.Slice:
		return nil, fmt.Errorf("%w: the list is a JSON %s, not an array", ErrMalformed, typ.Value)
	case errors.As(err, &typ):
		// Offset is where the offending value ends.
		return nil, fmt.Errorf("%w: byte %d: an ID is a JSON %s, not a string", ErrMalformed, typ.Offset, typ.Value)
	default:
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
}

// Chunks cuts s into pieces of at most units UTF-16 code units each, cut
// between runes, in order; joining them gives s back. The service counts a
// string property's length in UTF-16 units (32 K at most), so that is the
// measure here. An empty s gives no chunks. units must be at least 2, the
// width of one rune outside the Basic Multilingual Plane.
func Chunks(s string, units int) []string {
	if units < 2 {
		panic(fmt.Sprintf("idlist.Chunks: %d units cannot hold every rune", units))
	}
	var out []string
	for s != "" {
		n := cut(s, units)
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// cut is the length in bytes of the longest prefix of s, ending between
// runes, within n UTF-16 units.
func cut(s string, n int) int {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return i
		}
		units += w
	}
	return len(s)
}
