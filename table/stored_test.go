package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
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
	if ok, err := tb.Stored(ctx, don(), nil); ok || err != nil {
		t.Fatalf("missing entity: %v %v", ok, err)
	}
	if err := tb.Add(ctx, don(), nil); err != nil {
		t.Fatal(err)
	}
	svc.ResetCounts()
	v := don()
	if ok, err := tb.Stored(ctx, v, nil); !ok || err != nil || v.ETag == "" {
		t.Fatalf("same entity: %v %v, ETag %q", ok, err, v.ETag)
	}
	if svc.Count(fake.OpGetEntity) != 1 || svc.Total() != 1 {
		t.Fatalf("requests: %v", svc.Counts())
	}
	older := don()
	older.Age = 33
	if ok, err := tb.Stored(ctx, older, nil); ok || err != nil || older.ETag != "" {
		t.Fatalf("different entity: %v %v, ETag %q", ok, err, older.ETag)
	}
	svc.ResetCounts()
	var ie *table.InputError
	if _, err := tb.Stored(ctx, nil, nil); !errors.As(err, &ie) || !errors.Is(err, table.ErrNilValue) || svc.Total() != 0 {
		t.Fatalf("nil: %v, %d requests", err, svc.Total())
	}
	bad := don()
	bad.RowKey = "a/b"
	if _, err := tb.Stored(ctx, bad, nil); !errors.As(err, &ie) || !errors.Is(err, keys.ErrForbiddenChar) || svc.Total() != 0 {
		t.Fatalf("bad key: %v, %d requests", err, svc.Total())
	}
}
