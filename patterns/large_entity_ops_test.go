package patterns_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// TestLargeEntityKeyErrorsNameTheirOperation: a bad key given to a
// LargeEntity operation is refused before any request with an InputError
// that names that operation and the key's field (it once named
// "Lookup" and "value", the inter-partition index's, for every one).
func TestLargeEntityKeyErrorsNameTheirOperation(t *testing.T) {
	ctx := t.Context()
	var c reqcount.Counter
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Reports", c.TableOptions())
	_, _ = client.CreateTable(ctx, nil)
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(c.BlobOptions())
	_, _ = bc.CreateContainer(ctx, "bodies", nil)
	l, err := patterns.NewLargeEntity[report](tableOf(table.New[report](client, nil)), bc, "bodies", []string{"Body"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := "a/b" // '/' is not allowed in a key
	cases := []struct {
		op, field string
		call      func() error
	}{
		{"LargeEntity.Put", "RowKey", func() error {
			return l.Put(ctx, &report{Meta: table.Meta{PartitionKey: "p", RowKey: bad}}, nil)
		}},
		{"LargeEntity.Put", "PartitionKey", func() error {
			return l.Put(ctx, &report{Meta: table.Meta{PartitionKey: bad, RowKey: "r"}}, nil)
		}},
		{"LargeEntity.Get", "RowKey", func() error { _, err := l.Get(ctx, "p", bad, nil); return err }},
		{"LargeEntity.GetLazy", "RowKey", func() error { _, _, err := l.GetLazy(ctx, "p", bad, nil); return err }},
		{"LargeEntity.Delete", "RowKey", func() error { return l.Delete(ctx, "p", bad, nil) }},
		{"LargeEntity.Modify", "RowKey", func() error {
			_, err := l.Modify(ctx, "p", bad, func(*report) error { return nil }, nil)
			return err
		}},
	}
	c.Reset()
	for _, tc := range cases {
		err := tc.call()
		var ie *table.InputError
		if !errors.As(err, &ie) || ie.Op != tc.op || ie.Field != tc.field {
			t.Errorf("%s with a bad %s: %v; want an InputError of Op %q, Field %q", tc.op, tc.field, err, tc.op, tc.field)
		}
	}
	if n := c.N(); n != 0 {
		t.Errorf("%d requests for refused keys; want 0", n)
	}
}
