// Package tableio is the plumbing of package table that tablekit's own
// packages use and users do not: encoding a value for a transaction with
// the Table's encryption, the clear view an index copy holds, the check
// that settles a lost write, and the rule that keeps an ETag with its
// table when a batch writes a value. Each call site reads
// tableio.For(tbl).Method(...) for a *table.Table[T], or a function of
// this package for a Meta or a value of any struct type.
package tableio

import (
	"context"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tablehook"
	"github.com/tablekit/tablekit/table"
)

// Table is the plumbing of a *table.Table[T].
type Table[T any] interface {
	// Encode returns v as the JSON entity the service expects, after
	// checking every limit. A type with encrypted fields is refused
	// (table.ErrEncryptedType).
	Encode(v *T) ([]byte, error)
	// Decode fills v from an entity as the service returns it. A type
	// with encrypted fields is refused (table.ErrEncryptedType).
	Decode(data []byte, v *T) error
	// EncodeWrite returns the body a write of v in mode sends, as the
	// Table's own Add, Update and Upsert send it: declared keys composed
	// into v's Meta, every limit checked, and the encrypted fields sealed
	// under v's keys. A Merge body is refused for a type with encrypted
	// fields (table.ErrMergeEncrypted). It puts a typed value into a
	// transaction (internal/batchraw) with the Table's encryption.
	EncodeWrite(ctx context.Context, v *T, mode aztables.UpdateMode) ([]byte, error)
	// WriteMode is the mode an Update or Upsert in mode sends, as the
	// Table resolves it: mode, or for "" the Table's default (Replace for
	// a type with encrypted fields, else Merge); any other value is an
	// ErrBadOption.
	WriteMode(mode aztables.UpdateMode) (aztables.UpdateMode, error)
	// EncodeOnly is Encode restricted to the named properties: the
	// projection that an index copy stores.
	EncodeOnly(v *T, props map[string]bool) ([]byte, error)
	// ClearEntity returns v as an Entity of its clear properties (every
	// one but the encrypted ones) with v's Meta: what an index copy of v
	// may hold. For a type without encrypted fields it equals ToEntity.
	ClearEntity(v *T) (*table.Entity, error)
	// FromClearEntity decodes an Entity that ClearEntity made into a new T
	// whose encrypted fields are zero; one carrying a sealed property is
	// refused. The value is partial (the Table's writes refuse it) when T
	// has encrypted fields or e lacks a property every write stores.
	FromClearEntity(e *table.Entity) (*T, error)
	// FromStored decodes an Entity read through the raw view (Entities)
	// as the Table's own reads decode it: encrypted fields opened and
	// checked against the keys, the ETag kept.
	FromStored(ctx context.Context, e *table.Entity) (*T, error)
	// Stored reports whether v's entity is stored with exactly v's
	// properties; if so, v's ETag is set to the stored one. One request.
	// It settles a write whose response was lost (a 409 on the SDK's
	// retry of the caller's own insert). A missing entity is (false, nil).
	Stored(ctx context.Context, v *T) (bool, error)
	// Properties lists the property names T's fields are stored under.
	Properties() []string
	// EncryptedProperties lists the properties of T stored sealed; nil
	// when there are none.
	EncryptedProperties() []string
	// OnlyRowPrefix makes the Table the handle of one row kind: from then
	// on its queries read only the prefix's RowKey range, and its point
	// operations and writes refuse a RowKey without the prefix
	// (table.ErrOtherRowKind) before any request. Another prefix than the
	// one set before is refused (table.ErrBadOption).
	OnlyRowPrefix(prefix string) error
	// OnlyKind makes the Table the handle of one kind of row
	// (internal/rowkind): "" the user's entities, which an entity model
	// claims, or the kind of a pattern's rows, which its reads then take
	// alone (every other row is left out of queries and refused to Get,
	// table.ErrOtherRowKind) and every row it writes carries. Another kind
	// than the one set before is refused (table.ErrBadOption), as is the
	// raw view (a Table of Entity).
	OnlyKind(kind string) error
	// Span opens the span of a pattern's operation over the Table, named
	// name (Type.Method), with the Table's tracing provider and the table's
	// name, partitionKey and ops as attributes, as the Table's own
	// operations do (table.Options.TracingProvider and Name); the returned
	// end records the outcome. Without a provider it opens nothing.
	Span(ctx context.Context, name, partitionKey string, ops int) (context.Context, func(error))
	// Logger is the Table's logger (table.Options.Logger); nil when it has
	// none.
	Logger() *slog.Logger
}

// For returns t's plumbing.
func For[T any](t *table.Table[T]) Table[T] { return tablehook.Link(t).(Table[T]) }

// WrittenVia records in m a write through c that answered etag, by the
// rule on table.Meta: the ETag and Timestamp are kept when the write
// belongs to m's table. guarded: the write sent m.ETag as If-Match. A
// delete passes etag "": m's ETag is cleared by the same rule.
func WrittenVia(m *table.Meta, c table.Client, etag azcore.ETag, guarded bool) {
	tablehook.Link(m).(interface {
		WrittenVia(table.Client, azcore.ETag, bool)
	}).WrittenVia(c, etag, guarded)
}

type codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
	MetaOf(v any) (*table.Meta, error)
	PropertySize(name string, v table.Value) int
}

// Marshal encodes v, a pointer to a struct that embeds table.Meta, as the
// JSON entity the service expects, after checking every limit. A type
// with encrypted fields is refused (table.ErrEncryptedType).
func Marshal(v any) ([]byte, error) { return tablehook.Link(nil).(codec).Marshal(v) }

// Unmarshal decodes an entity as the service returns it into v, a pointer
// to a struct that embeds table.Meta.
func Unmarshal(data []byte, v any) error { return tablehook.Link(nil).(codec).Unmarshal(data, v) }

// MetaOf returns the Meta embedded in v, a pointer to a struct, with its
// declared keys composed into it first (table.ErrKeyMismatch when a key
// it holds differs).
func MetaOf(v any) (*table.Meta, error) { return tablehook.Link(nil).(codec).MetaOf(v) }

// PropertySize is what one property adds to an entity's size as the
// service counts it ("Understanding the Table service data model"): 8
// bytes, plus 2 per UTF-16 code unit of its name, plus its value (4 + 2 per
// UTF-16 unit for a string, 4 + length for binary, 1 for a boolean, 4 for
// an Int32, 8 for Int64, Double and DateTime, 16 for a Guid). A wide
// entity's packer fills its parts up to table.MaxEntityBytes with it.
func PropertySize(name string, v table.Value) int {
	return tablehook.Link(nil).(codec).PropertySize(name, v)
}
