package patterns

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Denormalized keeps copies of a source entity's properties inside other
// entities of the same partition (the guide's manager details inside the
// department entity), so one point query reads them all. The source and
// every copy change in one transaction: they never disagree
// ("Denormalization pattern").
type Denormalized[S, D any] struct {
	src    *table.Table[S]
	dst    *table.Table[D]
	client table.Client
	fields map[string]bool
	copyFn func(src *S, dst *D)
}

// NewDenormalized keeps the properties fields of D equal to what copyFn
// derives from S. fields must name properties of D; copyFn sets exactly
// those fields. src and dst are the two views of one table (the same
// client: a change is one transaction), each with its own codec and
// encryption. No request is sent.
func NewDenormalized[S, D any](src *table.Table[S], dst *table.Table[D], fields []string, copyFn func(src *S, dst *D)) (*Denormalized[S, D], error) {
	if src == nil || dst == nil {
		return nil, fmt.Errorf("%w: Denormalized needs the source's and the copies' table", ErrBadDefinition)
	}
	client := src.Client()
	if copyFn == nil || len(fields) == 0 {
		return nil, fmt.Errorf("%w: Denormalized needs fields and a copy func", ErrBadDefinition)
	}
	have := map[string]bool{}
	for _, p := range tableio.For(dst).Properties() {
		have[p] = true
	}
	set := map[string]bool{}
	for _, f := range fields {
		if !have[f] {
			return nil, fmt.Errorf("%w: %q is not a property of the copy's type", ErrBadDefinition, f)
		}
		set[f] = true
	}
	return &Denormalized[S, D]{src: src, dst: dst, client: client, fields: set, copyFn: copyFn}, nil
}

// Update writes src and refreshes the copied properties of every target
// (RowKeys in src's partition) in one transaction: one request. src is
// guarded by its ETag when it has one (upserted otherwise); each target
// must exist (If-Match: *) and only the copied properties of it change.
// Up to 99 targets.
func (d *Denormalized[S, D]) Update(ctx context.Context, src *S, targetRowKeys []string, options *WriteOptions) error {
	if src == nil {
		return &table.InputError{Op: opDenormalizedUpdate, Rule: table.ErrNilValue}
	}
	m := d.src.Meta(src)
	tx := batch.NewTransaction(nil)
	op := batch.Upsert(src, aztables.UpdateModeReplace)
	if m.ETag != "" {
		op = batch.Update(src, aztables.UpdateModeReplace)
	}
	if err := tx.Append(op); err != nil {
		return err
	}
	for _, rk := range targetRowKeys {
		if err := keyrules.ValidateRowKey(rk); err != nil {
			return &table.InputError{Op: opDenormalizedUpdate, Field: "target", Rule: err}
		}
		v := new(D)
		dm := d.dst.Meta(v)
		dm.PartitionKey, dm.RowKey = m.PartitionKey, rk
		d.copyFn(src, v)
		body, err := tableio.For(d.dst).EncodeOnly(v, d.fields)
		if err != nil {
			return err
		}
		exists := azcore.ETagAny
		if err := tx.Append(batchraw.Op(batch.KindUpdateMerge, body, &exists)); err != nil {
			return err
		}
	}
	_, err := tx.Submit(ctx, d.client, nil)
	return err
}
