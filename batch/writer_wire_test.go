package batch_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// plainFakeClient is a client of the fake's "events" table built with
// aztables alone: no tablekit policy, so the SDK's path.
func plainFakeClient(t testing.TB, svc *fake.TableService, l *ledger.Ledger) *aztables.Client {
	t.Helper()
	opts := &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: svc}}
	if l != nil {
		l.Attach(&opts.ClientOptions, ledger.Table)
	}
	c, err := aztables.NewClientWithNoCredential(svc.URL()+"events", opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A Writer, Plan and a Transaction on a client built the default way (the
// fake's clients carry tablekit's policy, as table.ClientOptions' do) send
// updates and upserts on keys with a single quote, with no option set.
func TestDefaultClientSendsQuotedKeys(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	e := ev("O'Brien & Sons", 1)
	e.RowKey = "emp_O'Brien"
	ops := []batch.Op{batch.Upsert(e, aztables.UpdateModeMerge)}
	sum, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values(ops), nil)
	if err != nil || sum.Operations != 1 || svc.Count(fake.OpBatch) != 1 {
		t.Fatalf("Writer: %+v %v, %d batches", sum, err, svc.Count(fake.OpBatch))
	}
	plan, err := batch.Plan([]batch.Op{batch.Update(e, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny)}, nil)
	if err != nil || len(plan) != 1 {
		t.Fatalf("Plan: %v %v", plan, err)
	}
	if _, err := plan[0].Submit(t.Context(), c, nil); err != nil {
		t.Fatalf("a planned transaction: %v", err)
	}
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Upsert(e, aztables.UpdateModeReplace), batch.Add(ev("O'Brien & Sons", 2))}, nil); err != nil {
		t.Fatalf("batch.Submit: %v", err)
	}
	if svc.Count(fake.OpBatch) != 3 || svc.Count(fake.OpGetEntity) != 0 {
		t.Fatalf("%d batches and %d reads reached the fake, want 3 and 0 (the probe is answered in the client)", svc.Count(fake.OpBatch), svc.Count(fake.OpGetEntity))
	}
	tb, _ := table.New[Event](c, nil)
	got, err := tb.Get(t.Context(), "O'Brien & Sons", "emp_O'Brien", nil)
	if err != nil || got.N != 1 {
		t.Fatalf("stored: %+v %v", got, err)
	}
}

// On a client without tablekit's policy the Writer and Submit refuse a
// quoted update or upsert with ErrQuoteInKey, whose text says how to build
// the client, before anything reaches the service; the Writer sends none
// of the write's transactions when the refused operation comes first.
func TestQuotedUpdateWithoutThePolicyIsRefusedBeforeSending(t *testing.T) {
	deadline(t, writerDeadline)
	svc, _ := newFake(t, nil)
	c := plainFakeClient(t, svc, nil)
	e := ev("O'Brien", 1)
	_, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values([]batch.Op{batch.Upsert(e, aztables.UpdateModeReplace), batch.Add(ev("p", 2))}), nil)
	var oe *batch.OpError
	if !errors.Is(err, batch.ErrQuoteInKey) || !errors.As(err, &oe) || oe.Index != 0 || !strings.Contains(err.Error(), "table.ClientOptions") {
		t.Fatalf("Writer: %v, want ErrQuoteInKey at operation 0 naming table.ClientOptions", err)
	}
	_, err = batch.Submit(t.Context(), c, []batch.Op{batch.Add(ev("O'Brien", 3)), batch.Update(e, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)}, nil)
	if !errors.Is(err, batch.ErrQuoteInKey) || !errors.As(err, &oe) || oe.Index != 1 {
		t.Fatalf("Submit: %v, want ErrQuoteInKey at operation 1", err)
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("%d requests reached the fake, want 0", n)
	}
	// Adds and deletes on quoted keys go the SDK's way.
	x := ev("O'Brien", 4)
	x.RowKey = "x'"
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Add(ev("O'Brien", 3)), batch.Add(x)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Delete("O'Brien", "x'")}, nil); err != nil || svc.Count(fake.OpBatch) != 2 {
		t.Fatalf("add and delete on quoted keys, SDK's path: %v, %d batches", err, svc.Count(fake.OpBatch))
	}
}

// Finding out whether a client has the policy costs no request either
// way: on a client with it, 31 transactions are 31 requests in the
// ledger; on one without it (and no quoted update to send) too, with no
// probe: the first transaction goes out the SDK's way with the wire
// path's mark, and what the client did with it is remembered.
func TestWriterProbesTheClientOnce(t *testing.T) {
	deadline(t, writerDeadline)
	svc, _ := newFake(t, nil)
	var ops []batch.Op
	for i := range 30 {
		ops = append(ops, batch.Add(ev(string(rune('a'+i%26))+string(rune('a'+i/26)), i)), batch.Upsert(ev("O'Brien", i), aztables.UpdateModeReplace))
	}
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	wired := svc.NewClient("events", opts)
	sum, err := batch.NewWriter(wired, nil).Write(t.Context(), slices.Values(ops), nil)
	if err != nil || sum.Requests != 31 || l.Total() != 31 {
		t.Fatalf("default client: %+v %v, ledger %d, want 31 requests", sum, err, l.Total())
	}
	var plainOps []batch.Op
	for i := range 30 {
		plainOps = append(plainOps, batch.Add(ev("q"+string(rune('a'+i%26))+string(rune('a'+i/26)), i)))
	}
	l2 := ledger.New()
	sum, err = batch.NewWriter(plainFakeClient(t, svc, l2), nil).Write(t.Context(), slices.Values(plainOps), nil)
	if err != nil || sum.Requests != 30 || l2.Total() != 30 {
		t.Fatalf("client without the policy: %+v %v, ledger %d, want 30 requests", sum, err, l2.Total())
	}
	l3 := ledger.New()
	if _, err := batch.Submit(t.Context(), plainFakeClient(t, svc, l3), []batch.Op{batch.Add(ev("r", 1))}, nil); err != nil || l3.Total() != 1 {
		t.Fatalf("one transaction without the policy: %v, ledger %d, want 1", err, l3.Total())
	}
}
