package table

import (
	"context"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/tablehook"
)

// The plumbing of this package: what only tablekit's own packages call,
// reached through internal/tableio, which describes these types with
// interfaces. Set once, before main; see internal/tablehook.
func init() {
	tablehook.Link = func(x any) any {
		switch x := x.(type) {
		case nil:
			return &codec{}
		case *Meta:
			return metaPlumbing{x}
		case interface{ plumbing() any }:
			return x.plumbing()
		}
		panic("table: no plumbing for this type")
	}
}

func (t *Table[T]) plumbing() any { return tablePlumbing[T]{t} }

// tablePlumbing is tableio.Table[T] for one Table: the encodings the index
// patterns and the entity model need (see index_entity.go) and the codec
// of one value (Encode, Decode), the lost-write
// check, the property lists and the row-kind restriction.
type tablePlumbing[T any] struct{ t *Table[T] }

func (p tablePlumbing[T]) Encode(v *T) ([]byte, error) { return p.t.encodeValue(v) }

func (p tablePlumbing[T]) Decode(data []byte, v *T) error { return p.t.decodeValue(data, v) }

func (p tablePlumbing[T]) EncodeWrite(ctx context.Context, v *T, mode aztables.UpdateMode) ([]byte, error) {
	return p.t.encodeWrite(ctx, v, mode)
}

func (p tablePlumbing[T]) WriteMode(mode aztables.UpdateMode) (aztables.UpdateMode, error) {
	return p.t.writeMode("Write", mode, aztables.UpdateModeMerge)
}

func (p tablePlumbing[T]) EncodeOnly(v *T, props map[string]bool) ([]byte, error) {
	return p.t.encodeOnly(v, props)
}

func (p tablePlumbing[T]) ClearEntity(v *T) (*Entity, error) { return p.t.clearEntity(v) }

func (p tablePlumbing[T]) FromClearEntity(e *Entity) (*T, error) { return p.t.fromClearEntity(e) }

func (p tablePlumbing[T]) FromStored(ctx context.Context, e *Entity) (*T, error) {
	return p.t.fromStored(ctx, e)
}

func (p tablePlumbing[T]) Stored(ctx context.Context, v *T) (bool, error) {
	return p.t.storedSpan(ctx, v)
}

func (p tablePlumbing[T]) Properties() []string { return p.t.properties() }

func (p tablePlumbing[T]) EncryptedProperties() []string { return p.t.encryptedProperties() }

func (p tablePlumbing[T]) OnlyRowPrefix(prefix string) error { return p.t.onlyRowPrefix(prefix) }

func (p tablePlumbing[T]) OnlyKind(kind string) error { return p.t.onlyKind(kind) }

func (p tablePlumbing[T]) Span(ctx context.Context, name, partitionKey string, ops int) (context.Context, func(error)) {
	if !p.t.tr.Enabled() {
		return ctx, noEnd
	}
	return p.t.tr.StartOn(ctx, name, p.t.spanTable(), partitionKey, ops)
}

func (p tablePlumbing[T]) Logger() *slog.Logger { return p.t.log }

// PropertySize is propertySize for internal/tableio: the wide entity's
// packer fills its parts with it.
func (c *codec) PropertySize(name string, v Value) int { return propertySize(name, v) }

// metaPlumbing is tableio's view of a Meta: the table its ETag belongs to.
type metaPlumbing struct{ m *Meta }

func (p metaPlumbing) WrittenVia(c Client, etag azcore.ETag, guarded bool) {
	p.m.writtenVia(c, etag, guarded)
}
