package consistency_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// quoteRow is an entity whose keys hold apostrophes and an ampersand.
type quoteRow struct {
	table.Meta
	Name string
	N    int
}

// TestProcessBatchQuotedKeys: the Mover's ProcessBatch on a Worker moves entities whose keys hold
// an apostrophe (O'Brien & Sons), which the SDK's $batch cannot upsert: on
// clients built the default way its transactions take tablekit's wire
// path, so every message is moved, at most 1.25 requests a message. Before
// the wire path was the default, each such move failed its upsert
// (batch.ErrQuoteInKey) and its message came back until poisoned. On the
// fake and, with TABLEKIT_CONNECTION_STRING, on Azurite.
func TestProcessBatchQuotedKeys(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		c := &counting{}
		paging := fake.Paging{AcrossPartitions: true} // one page per read: requests measure batching
		tables := fake.NewTableService(&fake.TableServiceOptions{Paging: &paging})
		queues := fake.NewQueueService(nil)
		moveQuoted(t, tables.NewServiceClient(&aztables.ClientOptions{ClientOptions: c.opts()}),
			queues.NewServiceClient(&azqueue.ClientOptions{ClientOptions: c.opts()}), c)
	})
	t.Run("Azurite", func(t *testing.T) {
		cs := testenv.ConnectionString(t)
		c := &counting{}
		// As the README builds it.
		tables, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(&aztables.ClientOptions{ClientOptions: c.opts()}))
		if err != nil {
			t.Fatal(err)
		}
		queues, err := azqueue.NewServiceClientFromConnectionString(cs, &azqueue.ClientOptions{ClientOptions: c.opts()})
		if err != nil {
			t.Fatal(err)
		}
		moveQuoted(t, tables, queues, c)
	})
}

func moveQuoted(t *testing.T, tables *aztables.ServiceClient, queues *azqueue.ServiceClient, c *counting) {
	ctx := t.Context()
	tb := func(base string) *table.Table[quoteRow] {
		name := testenv.UniqueName(base)
		if _, err := tables.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = tables.DeleteTable(context.Background(), name, nil) })
		v, err := table.New[quoteRow](tables.NewClient(name), nil)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	queue := func(base string) *azqueue.QueueClient {
		q := queues.NewQueueClient(strings.ToLower(testenv.UniqueName(base)))
		if _, err := q.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = q.Delete(context.Background(), nil) })
		return q
	}
	current, archive := tb("qcur"), tb("qarc")
	q, poison := queue("qmove"), queue("qpoison")
	mover := consistency.NewMover[quoteRow](current, archive, consistency.NewSender(q, nil), nil)
	// Two partitions, one after the other in the queue: 64 and 32 moves,
	// three dequeues of 32.
	var want []string
	for i := range 96 {
		pk := "O'Brien & Sons"
		if i >= 64 {
			pk = "Smith's"
		}
		v := &quoteRow{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("emp'%03d", i)}, Name: "Don O'Brien", N: i}
		if err := current.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		if err := mover.RequestValue(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, pk+"/"+v.RowKey)
	}
	c.n.Store(0)
	w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: 1})
	if err := w.HandleBatch(mover.MessageType(), mover.ProcessBatch); err != nil {
		t.Fatal(err)
	}
	st, err := w.Drain(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	requests := c.n.Load()
	if st.Processed != 96 || st.Poisoned != 0 || st.Retried != 0 {
		t.Fatalf("stats %+v, want 96 moved", st)
	}
	left, err := seqs.Collect(current.Query(ctx, nil))
	if err != nil || len(left) != 0 {
		t.Fatalf("left in current: %d (%v)", len(left), err)
	}
	got, err := seqs.Collect(archive.Query(ctx, nil))
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d in archive (%v), want %d", len(got), err, len(want))
	}
	for i, g := range got {
		if g.PartitionKey+"/"+g.RowKey != want[i] || g.Name != "Don O'Brien" || fmt.Sprintf("emp'%03d", g.N) != g.RowKey {
			t.Fatalf("archived %+v, want %s", g, want[i])
		}
	}
	perMsg := float64(requests) / 96
	t.Logf("%d requests for 96 messages: %.3f a message (%d batches)", requests, perMsg, st.Batches)
	if perMsg > 1.25 {
		t.Fatalf("%.3f requests a message, want at most 1.25", perMsg)
	}
}
