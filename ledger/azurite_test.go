package ledger_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// TestLedgerOnAzurite: emulator URLs put the account first in the path.
func TestLedgerOnAzurite(t *testing.T) {
	cs := testenv.ConnectionString(t)
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	svc, err := aztables.NewServiceClientFromConnectionString(cs, opts)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName("ledger")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	defer svc.DeleteTable(t.Context(), name, nil)
	tb, _ := table.New[emp](svc.NewClient(name), nil)
	if err := tb.Add(t.Context(), &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Get(t.Context(), "Sales", "1", nil); err != nil {
		t.Fatal(err)
	}
	if n := l.Count(ledger.Key{Service: ledger.Table, Operation: "GetEntity", Resource: name, Partition: "Sales"}); n != 1 {
		t.Fatalf("GetEntity on %s/Sales: %d\n%s", name, n, l)
	}
	if n := l.Count(ledger.Key{Service: ledger.Table, Operation: "InsertEntity", Resource: name}); n != 1 {
		t.Fatalf("InsertEntity: %d\n%s", n, l)
	}
}
