package batch_test

import (
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/table"
)

// lossyClient is a client whose first request after the table exists loses
// its response; the SDK retries it after a millisecond.
func lossyClient(t *testing.T, svc *fake.TableService) *aztables.Client {
	t.Helper()
	if _, err := svc.NewClient("events", nil).CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, faults.LoseResponse(1))
	opts.Retry.RetryDelay = time.Millisecond
	return svc.NewClient("events", opts)
}

func TestWriterResolvesALostTransactionResponse(t *testing.T) {
	deadline(t, writerDeadline)
	ops := func() []batch.Op {
		var out []batch.Op
		for i := 0; i < 50; i++ {
			out = append(out, batch.Add(ev("p", i)))
		}
		return out
	}
	// Without IdempotentAdds the retry's 409 fails a transaction that was
	// in fact committed: the ambiguity.
	svc := fake.NewTableService(nil)
	sum, err := batch.NewWriter(lossyClient(t, svc), nil).Write(t.Context(), slices.Values(ops()), nil)
	if err == nil || sum.Failed != 1 || svc.Len("events") != 50 {
		t.Fatalf("plain writer: %+v %v, %d stored", sum, err, svc.Len("events"))
	}

	svc = fake.NewTableService(nil)
	client := lossyClient(t, svc)
	svc.ResetCounts()
	sum, err = batch.NewWriter(client, &batch.WriterOptions{IdempotentAdds: true}).Write(t.Context(), slices.Values(ops()), nil)
	if err != nil || sum.Transactions != 1 || sum.Operations != 50 || sum.Resolved != 1 || sum.Reads != 1 {
		t.Fatalf("idempotent writer: %+v %v", sum, err)
	}
	// The batch, the SDK's retry of it, one range query.
	if svc.Count(fake.OpBatch) != 2 || svc.Count(fake.OpQueryEntities) != 1 || svc.Total() != 3 {
		t.Fatalf("requests: %v", svc.Counts())
	}

	// Someone else's different entity under one of the keys is a real conflict.
	svc = fake.NewTableService(nil)
	client = lossyClient(t, svc)
	other := ev("p", 7)
	other.Payload = "someone else's"
	if _, err := batch.Submit(t.Context(), svc.NewClient("events", nil), []batch.Op{batch.Add(other)}, nil); err != nil {
		t.Fatal(err)
	}
	sum, err = batch.NewWriter(client, &batch.WriterOptions{IdempotentAdds: true}).Write(t.Context(), slices.Values(ops()), nil)
	if !table.Is(err, table.ErrAlreadyExists) || sum.Resolved != 0 || sum.Failed != 1 {
		t.Fatalf("conflict with a different entity: %+v %v", sum, err)
	}
}

func TestAddIdempotentResolvesALostResponse(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
	}
	svc := fake.NewTableService(nil)
	tb, _ := table.New[Employee](lossyClient(t, svc), nil)
	err := tb.Add(t.Context(), &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Don"}, nil)
	if !table.Is(err, table.ErrAlreadyExists) || svc.Len("events") != 1 {
		t.Fatalf("plain Add after a lost response: %v", err)
	}

	svc = fake.NewTableService(nil)
	tb, _ = table.New[Employee](lossyClient(t, svc), nil)
	svc.ResetCounts()
	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Don"}
	if err := tb.Add(t.Context(), e, &table.AddOptions{Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	stored, _ := tb.Get(t.Context(), "Sales", "1", nil)
	if e.ETag == "" || e.ETag != stored.ETag {
		t.Fatalf("ETag %q, stored %q", e.ETag, stored.ETag)
	}
	if svc.Count(fake.OpInsertEntity) != 2 || svc.Count(fake.OpGetEntity) != 2 {
		t.Fatalf("requests: %v", svc.Counts())
	}
	// A different entity already there stays a conflict.
	err = tb.Add(t.Context(), &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Ben"}, &table.AddOptions{Idempotent: true})
	if !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("different entity: %v", err)
	}
}
