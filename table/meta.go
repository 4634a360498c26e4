package table

import (
	"encoding/hex"
	"errors"
	"reflect"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// Meta holds the system properties of an entity. Embed it in your struct:
// tablekit fills it on every read and writes ETag and Timestamp back after
// every write.
//
// An ETag belongs to one table. Meta remembers the table client its ETag
// was read or written through, and a write records its new ETag and
// Timestamp only when it belongs to the same table: when it goes through
// that client, when it was guarded by this very ETag (its success proves
// the ETag was that table's), or when Meta has no ETag or one set by hand.
// A write through another table's client (a copy of the value into an
// index table, an archive, another account) leaves ETag and Timestamp
// alone, so the value can still be updated or deleted, guarded by its
// ETag, where it was read. The table is known by its client, so use one
// client (one *aztables.Client) per table; Table.Client and
// Table.Entities share it. Batch operations follow the same rule with the
// client a transaction is submitted through.
type Meta struct {
	PartitionKey string
	RowKey       string
	// ETag is the entity's version; Update and Delete send it as If-Match.
	ETag azcore.ETag
	// Timestamp is set by the service on every write. It is read-only.
	Timestamp time.Time
	// from is the client ETag was read or written through; nil when it
	// was set by hand or by writtenETag.
	from Client
	// partial marks a value read without some of the properties its
	// entity stores (a $select projection, an index copy): a write of it
	// would store zeros over them, so the Table's writes refuse it
	// (ErrPartialValue).
	partial bool
}

// readVia records that m's ETag was just read through c (see Meta).
// Table's reads call it.
func (m *Meta) readVia(c Client) { m.from = c }

// writtenVia records a write through c that answered etag, by the rule on
// Meta: the ETag and the Timestamp it encodes are kept when the write
// belongs to m's table. guarded: the write sent m.ETag as If-Match. A
// delete passes etag "": m's ETag is cleared by the same rule.
func (m *Meta) writtenVia(c Client, etag azcore.ETag, guarded bool) {
	if !guarded && m.ETag != "" && m.from != nil && !sameClient(m.from, c) {
		return
	}
	if etag == "" {
		m.ETag = ""
	} else {
		m.writtenETag(etag)
	}
	m.from = c
}

// sameClient compares two ports by identity; clients of a type that
// cannot be compared are never the same.
func sameClient(a, b Client) bool {
	if a == nil || b == nil {
		return false
	}
	if !reflect.TypeOf(a).Comparable() || !reflect.TypeOf(b).Comparable() {
		return false
	}
	return a == b
}

// GUID is an Edm.Guid value.
type GUID [16]byte

// String formats g as 8-4-4-4-12 lowercase hex digits.
func (g GUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], g[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], g[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], g[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], g[8:10])
	b[23] = '-'
	hex.Encode(b[24:], g[10:])
	return string(b[:])
}

// ParseGUID parses the 8-4-4-4-12 form.
func ParseGUID(s string) (GUID, error) {
	var g GUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, errors.New("table: GUID must be 8-4-4-4-12 hex digits: " + s)
	}
	src := []byte(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	if _, err := hex.Decode(g[:], src); err != nil {
		return g, errors.New("table: GUID must be 8-4-4-4-12 hex digits: " + s)
	}
	return g, nil
}

// EDM type names of the service.
const (
	EdmString   = "Edm.String"
	EdmBoolean  = "Edm.Boolean"
	EdmInt32    = "Edm.Int32"
	EdmInt64    = "Edm.Int64"
	EdmDouble   = "Edm.Double"
	EdmDateTime = "Edm.DateTime"
	EdmGUID     = "Edm.Guid"
	EdmBinary   = "Edm.Binary"
)

// Property is a property that the struct does not name, kept as the service
// sent it so that it survives a read-modify-write unchanged.
type Property struct {
	// Type is the EDM type annotation, or "" when the service sent none
	// (strings, booleans, Int32 and some doubles).
	Type string
	// Value is the JSON value as received.
	Value []byte
}

// Extra catches every property that the struct does not name. Give a struct
// a field of this type (any name, no tag needed) and properties written by
// other code or newer versions survive Get followed by Update.
type Extra map[string]Property
