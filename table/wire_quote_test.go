package table_test

import (
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// firm is an entity whose keys the test fills with apostrophes.
type firm struct {
	table.Meta
	Name string
	N    int
}

// TestQuotedKeysEverywhere: keys such as O'Brien & Sons work in every
// typed operation, in transactions and in the Writer, on a client built
// the default way (the fake's carry tablekit's policy; on Azurite, as the
// README builds it), with no option anywhere.
func TestQuotedKeysEverywhere(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		svc := fake.NewTableService(nil)
		c := svc.NewClient("firms", nil)
		if _, err := c.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		quotedKeys(t, c)
	})
	t.Run("Azurite", func(t *testing.T) {
		quotedKeys(t, testenv.NewTable(t, "quoted"))
	})
}

func quotedKeys(t *testing.T, c *aztables.Client) {
	ctx := t.Context()
	if !wirepolicy.HasPath(c) {
		t.Fatal("the default client has no wire path")
	}
	firms, err := table.New[firm](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	const pk = "O'Brien & Sons"
	v := &firm{Meta: table.Meta{PartitionKey: pk, RowKey: "it's"}, Name: "Don O'Brien", N: 1}
	if err := firms.Add(ctx, v, nil); err != nil {
		t.Fatalf("Add: %v", err)
	}
	v.N = 2
	if err := firms.Update(ctx, v, nil); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if err := firms.Upsert(ctx, &firm{Meta: table.Meta{PartitionKey: pk, RowKey: "''"}, N: 3}, nil); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if _, err := firms.Modify(ctx, pk, "it's", func(f *firm) error { f.N = 4; return nil }, nil); err != nil {
		t.Fatalf("Modify: %v", err)
	}
	// A transaction of every kind on quoted keys, then the Writer.
	got, err := firms.Get(ctx, pk, "it's", nil)
	if err != nil || got.N != 4 || got.Name != "Don O'Brien" {
		t.Fatalf("Get: %+v %v", got, err)
	}
	got.N = 5
	if _, err := batch.Submit(ctx, c, []batch.Op{batch.Update(got, aztables.UpdateModeMerge),
		batch.Upsert(&firm{Meta: table.Meta{PartitionKey: pk, RowKey: "a'b"}, N: 6}, aztables.UpdateModeReplace),
		batch.Add(&firm{Meta: table.Meta{PartitionKey: pk, RowKey: "'"}, N: 7}),
		batch.Delete(pk, "''")}, nil); err != nil {
		t.Fatalf("transaction: %v", err)
	}
	var ops []batch.Op
	for i := range 150 {
		ops = append(ops, batch.Upsert(&firm{Meta: table.Meta{PartitionKey: "Smith's", RowKey: "emp'" + string(rune('A'+i%26)) + string(rune('a'+i/26))}, N: i}, aztables.UpdateModeMerge))
	}
	if sum, err := batch.NewWriter(c, nil).Write(ctx, slices.Values(ops), nil); err != nil || sum.Operations != 150 {
		t.Fatalf("Writer: %+v %v", sum, err)
	}
	all, err := seqs.Collect(firms.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"'": 7, "a'b": 6, "it's": 5}
	if len(all) != len(want) {
		t.Fatalf("partition %q holds %d, want %d", pk, len(all), len(want))
	}
	for _, f := range all {
		if want[f.RowKey] != f.N {
			t.Errorf("%q: N=%d, want %d", f.RowKey, f.N, want[f.RowKey])
		}
	}
	if n, err := seqs.Collect(firms.Query(ctx, &table.QueryOptions{Filter: table.Partition("Smith's")})); err != nil || len(n) != 150 {
		t.Fatalf("Writer's partition: %d (%v)", len(n), err)
	}
	if err := firms.DeleteValue(ctx, all[0], nil); err != nil {
		t.Fatalf("DeleteValue: %v", err)
	}
	if err := firms.Delete(ctx, pk, "a'b", nil); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}
