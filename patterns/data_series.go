package patterns

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// ErrTooManySlots: a series that does not fit one entity's 252 properties.
var ErrTooManySlots = fmt.Errorf("patterns: a data series holds at most %d slots in one entity; use WideEntity for more", table.MaxUserProperties)

// Series is a data series as read: one value per slot.
type Series[V int32 | int64 | float64] struct {
	Values []V
	// Set tells which slots hold a value (the others read as zero).
	Set  []bool
	ETag azcore.ETag
}

// DataSeries stores a whole series in one entity, a property per slot (the
// guide's messages per hour: 24 properties "H00".."H23"), so the series is
// one point query and a slot is one merge ("Data series pattern", and the
// checklist's "storing data series in a single entity").
type DataSeries[V int32 | int64 | float64] struct {
	client table.Client
	prefix string
	slots  int
	width  int
}

// NewDataSeries defines series of slots values stored as properties named
// prefix and the zero-padded slot number. No request is sent.
func NewDataSeries[V int32 | int64 | float64](client table.Client, prefix string, slots int) (*DataSeries[V], error) {
	if slots < 1 || slots > table.MaxUserProperties {
		return nil, ErrTooManySlots
	}
	width := len(strconv.Itoa(slots - 1))
	if err := keys.ValidatePropertyName(prefix + fmt.Sprintf("%0*d", width, 0)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	return &DataSeries[V]{client: client, prefix: prefix, slots: slots, width: width}, nil
}

func (d *DataSeries[V]) prop(slot int) string { return fmt.Sprintf("%s%0*d", d.prefix, d.width, slot) }

// SetOptions configure Set.
type SetOptions struct {
	// IfMatch writes only over that version of the series (concurrent
	// writers of one series); the series must then exist. Default: nil,
	// insert or merge whatever the version.
	IfMatch *azcore.ETag
}

func (d *DataSeries[V]) encode(op, pk, rk string, values map[int]V) ([]byte, error) {
	if err := keys.ValidatePartitionKey(pk); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	if err := keys.ValidateRowKey(rk); err != nil {
		return nil, &table.InputError{Op: op, Field: "RowKey", Rule: err}
	}
	m := map[string]any{"PartitionKey": pk, "RowKey": rk}
	for slot, v := range values {
		if slot < 0 || slot >= d.slots {
			return nil, &table.InputError{Op: op, Field: "slot", Rule: table.ErrValueOutOfRange, Detail: fmt.Sprintf("slot %d of 0..%d", slot, d.slots-1)}
		}
		p := d.prop(slot)
		switch x := any(v).(type) {
		case int32:
			m[p] = x
		case int64:
			m[p], m[p+"@odata.type"] = strconv.FormatInt(x, 10), table.EdmInt64
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, &table.InputError{Op: op, Field: p, Rule: table.ErrInvalidValue, Detail: "NaN and infinities"}
			}
			m[p], m[p+"@odata.type"] = x, table.EdmDouble
		}
	}
	return json.Marshal(m)
}

// Set writes one slot with one merge: one request. It returns the series'
// new ETag.
func (d *DataSeries[V]) Set(ctx context.Context, partitionKey, rowKey string, slot int, value V, opts *SetOptions) (azcore.ETag, error) {
	return d.SetMany(ctx, partitionKey, rowKey, map[int]V{slot: value}, opts)
}

// SetMany writes several slots with one merge: one request.
func (d *DataSeries[V]) SetMany(ctx context.Context, partitionKey, rowKey string, values map[int]V, opts *SetOptions) (azcore.ETag, error) {
	body, err := d.encode("DataSeries.Set", partitionKey, rowKey, values)
	if err != nil {
		return "", err
	}
	if opts != nil && opts.IfMatch != nil {
		resp, err := d.client.UpdateEntity(ctx, body, &aztables.UpdateEntityOptions{IfMatch: opts.IfMatch, UpdateMode: aztables.UpdateModeMerge})
		if err != nil {
			return "", &table.ServiceError{Op: "DataSeries.Set", PartitionKey: partitionKey, RowKey: rowKey, Err: err}
		}
		return resp.ETag, nil
	}
	resp, err := d.client.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge})
	if err != nil {
		return "", &table.ServiceError{Op: "DataSeries.Set", PartitionKey: partitionKey, RowKey: rowKey, Err: err}
	}
	return resp.ETag, nil
}

// Get reads the whole series with one point query.
func (d *DataSeries[V]) Get(ctx context.Context, partitionKey, rowKey string) (*Series[V], error) {
	if err := validKeys("DataSeries.Get", partitionKey, "RowKey", rowKey); err != nil {
		return nil, err
	}
	resp, err := d.client.GetEntity(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return nil, &table.ServiceError{Op: "DataSeries.Get", PartitionKey: partitionKey, RowKey: rowKey, Err: err}
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		return nil, err
	}
	s := &Series[V]{Values: make([]V, d.slots), Set: make([]bool, d.slots), ETag: resp.ETag}
	for i := 0; i < d.slots; i++ {
		raw, ok := m[d.prop(i)]
		if !ok {
			continue
		}
		var f float64
		switch x := raw.(type) {
		case float64:
			f = x
		case string:
			n, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return nil, fmt.Errorf("patterns: slot %s holds %q", d.prop(i), x)
			}
			if iv, err := strconv.ParseInt(x, 10, 64); err == nil {
				var zero V
				if _, isInt := any(zero).(int64); isInt {
					s.Values[i], s.Set[i] = V(iv), true
					continue
				}
			}
			f = n
		default:
			return nil, fmt.Errorf("patterns: slot %s holds %v", d.prop(i), raw)
		}
		s.Values[i], s.Set[i] = V(f), true
	}
	return s, nil
}
