package ledger_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

type emp struct {
	table.Meta
	Name string
}

func TestLedgerCountsByOperationResourceAndPartition(t *testing.T) {
	ctx := t.Context()
	l := ledger.New()
	svc := fake.NewTableService(nil)
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	sc := svc.NewServiceClient(opts)
	if _, err := sc.CreateTable(ctx, "Employees", nil); err != nil {
		t.Fatal(err)
	}
	tb, _ := table.New[emp](sc.NewClient("Employees"), nil)
	for i := 0; i < 3; i++ {
		if err := tb.Add(ctx, &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprint(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = tb.Get(ctx, "Sales", "1", nil)
	_, _ = tb.Get(ctx, "O'Brien", "x", nil)
	_, _ = seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix("Sales", "1")}))
	_, _ = batch.Submit(ctx, tb.Client(), []batch.Op{batch.Delete("Sales", "0"), batch.Delete("Sales", "2")}, nil)
	// Two 503s are retried by the SDK: three tries of one call.
	svc.FailNext(fake.OpGetEntity, 2, http.StatusServiceUnavailable, "ServerBusy")
	_, _ = tb.Get(ctx, "Sales", "1", nil)

	want := map[ledger.Key]int{
		{Service: ledger.Table, Operation: "CreateTable"}:                                              1,
		{Service: ledger.Table, Operation: "InsertEntity", Resource: "Employees"}:                      3,
		{Service: ledger.Table, Operation: "GetEntity", Resource: "Employees", Partition: "Sales"}:     4,
		{Service: ledger.Table, Operation: "GetEntity", Resource: "Employees", Partition: "O'Brien"}:   1,
		{Service: ledger.Table, Operation: "QueryEntities", Resource: "Employees", Partition: "Sales"}: 1,
		{Service: ledger.Table, Operation: "Batch"}:                                                    1,
	}
	for k, n := range want {
		if got := l.Count(k); got != n {
			t.Errorf("%+v: %d, want %d\n%s", k, got, n, l)
		}
	}
	if l.Total() != 11 || l.Retries() != 2 || l.Operation(ledger.Table, "GetEntity") != 5 {
		t.Fatalf("total %d, retries %d\n%s", l.Total(), l.Retries(), l)
	}
	l.Reset()
	if l.Total() != 0 || len(l.Entries()) != 0 {
		t.Fatal("Reset")
	}
}

func TestLedgerQueueAndNoSecrets(t *testing.T) {
	ctx := t.Context()
	l := ledger.New()
	qs := fake.NewQueueService(nil)
	opts := &azqueue.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Queue)
	q := qs.NewQueueClient("work", opts)
	_, _ = q.Create(ctx, nil)
	_, _ = q.EnqueueMessage(ctx, "m", nil)
	d, _ := q.DequeueMessages(ctx, nil)
	_, _ = q.DeleteMessage(ctx, *d.Messages[0].MessageID, *d.Messages[0].PopReceipt, nil)
	for op, n := range map[string]int{"CreateQueue": 1, "EnqueueMessage": 1, "DequeueMessages": 1, "DeleteMessage": 1} {
		if got := l.Count(ledger.Key{Service: ledger.Queue, Operation: op, Resource: "work"}); got != n {
			t.Errorf("%s: %d\n%s", op, got, l)
		}
	}
	// A table client that carries a SAS in its URL: nothing of it is kept.
	tl := ledger.New()
	svc := fake.NewTableService(nil)
	_, _ = svc.NewClient("t", nil).CreateTable(ctx, nil)
	topts := &aztables.ClientOptions{}
	topts.Transport = svc
	topts.PerRetryPolicies = []policy.Policy{tl.Policy(ledger.Table)}
	sasClient, _ := aztables.NewClientWithNoCredential(svc.URL()+"t?sv=2019-02-02&se=2099-01-01T00%3A00%3A00Z&sp=r&tn=t&sig=SECRETSIGNATURE%3D", topts)
	_, _ = sasClient.GetEntity(context.Background(), "p", "r", nil)
	if out := tl.String() + fmt.Sprint(tl.Entries()); strings.Contains(out, "SECRET") || strings.Contains(out, "sig") {
		t.Fatalf("the ledger kept a secret:\n%s", out)
	}
	if tl.Operation(ledger.Table, "GetEntity") != 1 {
		t.Fatalf("SAS request not counted:\n%s", tl)
	}
}
