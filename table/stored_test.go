package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

func TestStored(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
		Age  int64
	}
	svc, client := newPatients(t)
	tb, _ := table.New[Employee](client, nil)
	ctx := t.Context()
	don := func() *Employee {
		return &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Name: "Don", Age: 34}
	}
	if ok, err := tableio.For(tb).Stored(ctx, don()); ok || err != nil {
		t.Fatalf("missing entity: %v %v", ok, err)
	}
	added := don()
	if err := tb.Add(ctx, added, nil); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	v := don()
	if ok, err := tableio.For(tb).Stored(ctx, v); !ok || err != nil || v.ETag == "" || v.ETag != added.ETag {
		t.Fatalf("same entity: %v %v, ETag %q", ok, err, v.ETag)
	}
	if svc.Count(fake.OpGetEntity) != 1 || svc.Total() != 1 {
		t.Fatalf("requests: %v", svc.Counts())
	}
	older := don()
	older.Age = 33
	if ok, err := tableio.For(tb).Stored(ctx, older); ok || err != nil || older.ETag != "" {
		t.Fatalf("different entity: %v %v, ETag %q", ok, err, older.ETag)
	}
	svc.ResetCounts()
	var ie *table.InputError
	if _, err := tableio.For(tb).Stored(ctx, nil); !errors.As(err, &ie) || !errors.Is(err, table.ErrNilValue) || svc.Total() != 0 {
		t.Fatalf("nil: %v, %d requests", err, svc.Total())
	}
	bad := don()
	bad.RowKey = "a/b"
	if _, err := tableio.For(tb).Stored(ctx, bad); !errors.As(err, &ie) || !errors.Is(err, keys.ErrForbiddenChar) || svc.Total() != 0 {
		t.Fatalf("bad key: %v, %d requests", err, svc.Total())
	}
}
