// Package rowkind marks the rows tablekit writes beside a user's entities
// that are no entity of the user's type: index copies, index entities
// (lists of IDs), a model's control and build checkpoint rows, and the
// rows of the patterns that share a table with the entities (a log
// tail's entries, sharded appends, a data series, a wide entity's parts,
// a large entity). Each carries one of two reserved properties, so that a
// typed table handle tells them from the user's rows by the stored row
// alone, without knowing which model, index or pattern wrote it, and
// never decodes one as its type. Package table reads the marks (and
// writes a pattern's through a handle of that kind); package patterns
// writes the others.
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
	// Log is an entry of a log tail (patterns.LogTail).
	Log Kind = "log"
	// Shard is an entry appended to a shard (patterns.Sharded).
	Shard Kind = "shard"
	// Series is a data series (patterns.DataSeries): one row, a property
	// per slot.
	Series Kind = "series"
	// WidePart is one part of a wide entity (patterns.WideEntity).
	WidePart Kind = "wide"
	// Large is a large entity's row (patterns.LargeEntity): its fields
	// but the ones kept in blobs, and the blobs' references.
	Large Kind = "large"
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
	marked := false
	scan(data, func(bool, []byte) bool { marked = true; return false })
	return marked
}

// Is reports whether data, one entity as the service's JSON, is a row of
// kind k: it carries Property with the value k, and no IndexOf.
func Is(data []byte, k Kind) bool {
	want := []byte(`"` + string(k) + `"`)
	is := false
	scan(data, func(kind bool, value []byte) bool {
		is = kind && bytes.HasPrefix(value, want)
		return is
	})
	return is
}

// scan calls fn with each marking member of data that is not null: kind
// tells Property from IndexOf, value is the rest of data from the
// member's value on. It stops when fn returns false.
func scan(data []byte, fn func(kind bool, value []byte) bool) {
	for i := 0; ; {
		j := bytes.Index(data[i:], quoteTk)
		if j < 0 {
			return
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
		if !fn(n == len(kindRest), rest[k:]) {
			return
		}
	}
}

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
