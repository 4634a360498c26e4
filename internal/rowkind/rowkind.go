// Package rowkind marks the rows tablekit writes beside a user's entities
// that are no entity of the user's type: index copies, index entities
// (lists of IDs) and a model's control and build checkpoint rows. Each
// carries one of two reserved properties, so that a typed table handle
// tells them from the user's rows by the stored row alone, without
// knowing which model or index wrote it, and never decodes one as its
// type. Package table reads the marks; package patterns writes them.
package rowkind

import "bytes"

// IndexOf is the property every index copy carries: the reference to the
// primary it copies (the tuple of the primary's keys).
const IndexOf = "TkIndexOf"

// Property is the property every other row tablekit writes beside a
// user's entities carries, holding the row's Kind.
const Property = "TkKind"

// Kind is the value of Property: what a marked row is.
type Kind string

// The kinds of the rows that carry Property.
const (
	// List is an index entity: a value's list of the IDs that have it.
	List Kind = "list"
	// Control is a model's control row: the states of its indexes.
	Control Kind = "control"
	// Checkpoint is a row of a model's build or drop: its plan or the
	// progress of one of its ranges.
	Checkpoint Kind = "checkpoint"
)

// IsReserved reports whether name is one of the marking properties, which
// no field of a user's type may be stored under.
func IsReserved(name string) bool { return name == IndexOf || name == Property }

var (
	quoteTk     = []byte(`"Tk`)
	indexOfRest = []byte(IndexOf[2:] + `"`)
	kindRest    = []byte(Property[2:] + `"`)
	null        = []byte("null")
)

// Marked reports whether data, one entity as the service's JSON, carries
// IndexOf or Property with a value other than null (a $select that names
// a property an entity lacks may bring it back as null). A quoted token
// followed by a colon is a member's name: inside a string value every
// quote is escaped, so a value that merely mentions a marking property is
// not taken for one.
func Marked(data []byte) bool {
	for i := 0; ; {
		j := bytes.Index(data[i:], quoteTk)
		if j < 0 {
			return false
		}
		i += j + len(quoteTk)
		rest := data[i:]
		var n int
		switch {
		case bytes.HasPrefix(rest, indexOfRest):
			n = len(indexOfRest)
		case bytes.HasPrefix(rest, kindRest):
			n = len(kindRest)
		default:
			continue
		}
		k := ws(rest, n)
		if k >= len(rest) || rest[k] != ':' {
			continue
		}
		if k = ws(rest, k+1); bytes.HasPrefix(rest[k:], null) {
			continue
		}
		return true
	}
}

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
