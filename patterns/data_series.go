package patterns

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/table"
)

// DataSeries stores a whole series in one entity, a property per slot (the
// guide's messages per hour: 24 properties "H00".."H23"), so the series is
// one point query and a slot is one merge ("Data series pattern", and the
// checklist's "storing data series in a single entity"). The entity
// carries the mark of a series, so an entity model's handle and every
// other typed handle of the table leave it out, and Get refuses a row
// without it (table.ErrOtherRowKind).
type DataSeries[V int32 | int64 | float64] struct {
	tbl    *table.Table[table.Entity]
	prefix string
	slots  int
	width  int
}

// NewDataSeries defines series of slots values stored as properties named
// prefix and the zero-padded slot number, in the entities of tbl (whose
// name, logger and tracing apply). No request is sent.
func NewDataSeries[V int32 | int64 | float64](tbl *table.Table[table.Entity], prefix string, slots int) (*DataSeries[V], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: DataSeries needs a table", ErrBadDefinition)
	}
	if slots < 1 {
		return nil, fmt.Errorf("%w: a data series needs at least 1 slot, not %d", ErrBadDefinition, slots)
	}
	if slots > table.MaxUserProperties {
		return nil, fmt.Errorf("%w: a data series holds at most %d slots in one entity, not %d; use WideEntity for more", ErrBadDefinition, table.MaxUserProperties, slots)
	}
	width := len(strconv.Itoa(slots - 1))
	if err := keyrules.ValidatePropertyName(prefix + fmt.Sprintf("%0*d", width, 0)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	return &DataSeries[V]{tbl: tbl, prefix: prefix, slots: slots, width: width}, nil
}

func (d *DataSeries[V]) prop(slot int) string { return fmt.Sprintf("%s%0*d", d.prefix, d.width, slot) }

// SetOptions configure Set.
type SetOptions struct {
	// IfMatch writes only over that version of the series (concurrent
	// writers of one series); the series must then exist. Default: nil,
	// insert or merge whatever the version.
	IfMatch *azcore.ETag
}

func (d *DataSeries[V]) entity(op, pk, rk string, values map[int]V) (*table.Entity, error) {
	if err := validKeys(op, pk, "RowKey", rk); err != nil {
		return nil, err
	}
	e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
	markKind(e, rowkind.Series)
	for slot, v := range values {
		if slot < 0 || slot >= d.slots {
			return nil, &table.InputError{Op: op, Field: "slot", Rule: table.ErrValueOutOfRange, Detail: fmt.Sprintf("slot %d of 0..%d", slot, d.slots-1)}
		}
		p := d.prop(slot)
		switch x := any(v).(type) {
		case int32:
			e.Set(p, table.ValueOf(int32(x)))
		case int64:
			e.Set(p, table.ValueOf(int64(x)))
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, &table.InputError{Op: op, Field: p, Rule: table.ErrInvalidValue, Detail: "NaN and infinities"}
			}
			e.Set(p, table.ValueOf(float64(x)))
		}
	}
	return e, nil
}

// Set writes one slot with one merge: one request. It returns the series'
// new ETag.
func (d *DataSeries[V]) Set(ctx context.Context, partitionKey, rowKey string, slot int, value V, opts *SetOptions) (azcore.ETag, error) {
	return d.SetMany(ctx, partitionKey, rowKey, map[int]V{slot: value}, opts)
}

// SetMany writes several slots with one merge: one request.
func (d *DataSeries[V]) SetMany(ctx context.Context, partitionKey, rowKey string, values map[int]V, opts *SetOptions) (azcore.ETag, error) {
	e, err := d.entity(opDataSeriesSet, partitionKey, rowKey, values)
	if err != nil {
		return "", err
	}
	// Merge, not Replace: the other slots stay as they are.
	if opts != nil && opts.IfMatch != nil {
		e.ETag = *opts.IfMatch
		err = d.tbl.Update(ctx, e, &table.UpdateOptions{Mode: aztables.UpdateModeMerge})
	} else {
		err = d.tbl.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeMerge})
	}
	if err != nil {
		return "", fmt.Errorf("patterns: DataSeries.Set: %w", err)
	}
	return e.ETag, nil
}

// Get reads the whole series with one point query: the slots that hold a
// value, by slot number, as SetMany takes them (a slot never set is
// absent), and the series' ETag, which Set's opts.IfMatch takes.
func (d *DataSeries[V]) Get(ctx context.Context, partitionKey, rowKey string, options *ReadOptions) (map[int]V, azcore.ETag, error) {
	if err := validKeys(opDataSeriesGet, partitionKey, "RowKey", rowKey); err != nil {
		return nil, "", err
	}
	e, err := d.tbl.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return nil, "", fmt.Errorf("patterns: DataSeries.Get: %w", err)
	}
	if !ofKind(e, rowkind.Series) {
		return nil, "", otherKind(opDataSeriesGet, e, rowkind.Series)
	}
	values := make(map[int]V, d.slots)
	for i := 0; i < d.slots; i++ {
		val, ok := e.Get(d.prop(i))
		if !ok {
			continue
		}
		var got V
		switch p := any(&got).(type) {
		case *int32:
			*p, ok = val.AsInt32()
		case *int64:
			*p, ok = val.AsInt64()
		case *float64:
			*p, ok = val.AsDouble()
		}
		if !ok {
			return nil, "", fmt.Errorf("patterns: DataSeries.Get: slot %s holds %v", d.prop(i), val)
		}
		values[i] = got
	}
	return values, e.ETag, nil
}
