package batch_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// TestOperationKeysAreValidatedBeforeSending: an operation whose keys are
// not given through the codec (a delete by keys or by value, a raw entity)
// has both its PartitionKey and its RowKey checked when it is appended,
// each on its own: a valid PartitionKey does not let an invalid RowKey
// through, nor the reverse. The refusal names the key and the rule, and a
// Writer given the operation sends nothing.
func TestOperationKeysAreValidatedBeforeSending(t *testing.T) {
	etag := azcore.ETag(`W/"1"`)
	cases := []struct {
		name string
		op   batch.Op
		bad  string // the key refused
	}{
		{"delete, bad RowKey", batch.Delete("p", "r/1"), "RowKey"},
		{"delete, bad PartitionKey", batch.Delete("p/1", "r"), "PartitionKey"},
		{"conditional delete, bad RowKey", batch.Delete("p", "r#1").IfMatch(etag), "RowKey"},
		{"delete of a value, bad RowKey", batch.DeleteValue(&Event{Meta: table.Meta{PartitionKey: "p", RowKey: "r?1", ETag: etag}}), "RowKey"},
		{"delete of a value, bad PartitionKey", batch.DeleteValue(&Event{Meta: table.Meta{PartitionKey: "p\\1", RowKey: "r", ETag: etag}}), "PartitionKey"},
		{"raw add, bad RowKey", batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":"p","RowKey":"r/1"}`), nil), "RowKey"},
		{"raw add, bad PartitionKey", batchraw.Op(batch.KindAdd, []byte(`{"PartitionKey":"p#1","RowKey":"r"}`), nil), "PartitionKey"},
		{"raw delete, bad RowKey", batchraw.Op(batch.KindDelete, []byte(`{"PartitionKey":"p","RowKey":"r\u0001"}`), nil), "RowKey"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deadline(t, writerDeadline)
			err := batch.NewTransaction(nil).Append(c.op)
			var oe *batch.OpError
			var ve *keys.ValidationError
			if !errors.As(err, &oe) || oe.Index != 0 || !errors.As(err, &ve) || ve.What != c.bad {
				t.Fatalf("Append: %v; want an *OpError at 0 wrapping a *keys.ValidationError of the %s", err, c.bad)
			}
			if !errors.Is(err, keys.ErrForbiddenChar) && !errors.Is(err, keys.ErrControlChar) {
				t.Errorf("the rule is missing from the chain: %v", err)
			}

			svc, client := newFake(t, nil)
			_, err = batch.NewWriter(client, nil).Write(t.Context(), slices.Values([]batch.Op{c.op}), nil)
			if !errors.As(err, &oe) || !errors.As(err, &ve) || ve.What != c.bad {
				t.Fatalf("Write: %v; want the operation refused for its %s", err, c.bad)
			}
			if n := svc.Count(fake.OpBatch); n != 0 {
				t.Errorf("%d transactions sent; nothing is sent for an operation that can never be sent", n)
			}
		})
	}
}
