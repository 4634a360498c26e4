package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/poisonq"
	"github.com/tablekit/tablekit/table"
)

// TestCoreCatalogueGaps: bad input to the worker, the sender and the
// Writer that used to be silently replaced by a default or reported
// untyped. Each case must fail with its sentinel before any request.
func TestCoreCatalogueGaps(t *testing.T) {
	ctx := t.Context()
	queues, tables := fake.NewQueueService(nil), fake.NewTableService(nil)
	q, p := queues.NewQueueClient("gaps", nil), queues.NewQueueClient("gaps-poison", nil)
	for _, c := range []*azqueue.QueueClient{q, p} {
		if _, err := c.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	tc := tables.NewClient("gaps", nil)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// A message waits, so a worker that wrongly starts has work to do.
	if _, err := q.EnqueueMessage(ctx, `{"type":"x.v1","key":"k"}`, nil); err != nil {
		t.Fatal(err)
	}
	type row struct {
		table.Meta
		N int
	}
	op := batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}})
	drain := func(o consistency.WorkerOptions) func(context.Context) error {
		return func(ctx context.Context) error {
			w := consistency.NewWorker(q, p, &o)
			_ = w.Handle("x.v1", func(context.Context, *consistency.Message) error { return nil })
			_, err := w.Drain(ctx, nil)
			return err
		}
	}
	run := func(o consistency.WorkerOptions) func(context.Context) error {
		return func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			w := consistency.NewWorker(q, p, &o)
			return w.Run(ctx, nil)
		}
	}
	write := func(o batch.WriterOptions) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := batch.NewWriter(tc, &o).Write(ctx, slices.Values([]batch.Op{op}), nil)
			return err
		}
	}
	cases := []struct {
		name string
		want error
		call func(context.Context) error
	}{
		{"Worker.Handle of a nil handler", consistency.ErrNilHandler, func(context.Context) error {
			return consistency.NewWorker(q, p, nil).Handle("x.v1", nil)
		}},
		{"Sender.Send of a payload JSON cannot encode", consistency.ErrBadPayload, func(ctx context.Context) error {
			return consistency.NewSender(q, nil).Send(ctx, "x.v1", "k", make(chan int), nil)
		}},
		{"WorkerOptions.BatchSize 33 (Drain)", consistency.ErrBadOption, drain(consistency.WorkerOptions{BatchSize: 33})},
		{"WorkerOptions.BatchSize -1 (Run)", consistency.ErrBadOption, run(consistency.WorkerOptions{BatchSize: -1})},
		{"WorkerOptions.Visibility 500 ms", consistency.ErrBadOption, drain(consistency.WorkerOptions{Visibility: 500 * time.Millisecond})},
		{"WorkerOptions.Concurrency -1", consistency.ErrBadOption, drain(consistency.WorkerOptions{Concurrency: -1})},
		{"WorkerOptions.MaxDequeues -1", consistency.ErrBadOption, drain(consistency.WorkerOptions{MaxDequeues: -1})},
		{"WriterOptions.Parallelism -1", batch.ErrBadOption, write(batch.WriterOptions{Parallelism: -1})},
		{"WriterOptions.MaxAttempts -1", batch.ErrBadOption, write(batch.WriterOptions{MaxAttempts: -1})},
	}
	for _, c := range cases {
		queues.ResetCounts()
		tables.ResetCounts()
		err := c.call(ctx)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if n := queues.Total() + tables.Total(); n != 0 {
			t.Errorf("%s: %d requests, want none", c.name, n)
		}
	}
	// Control: the counters count, and a valid worker takes the message.
	queues.ResetCounts()
	if err := drain(consistency.WorkerOptions{})(ctx); err != nil || queues.Total() == 0 {
		t.Fatalf("control drain: %v, %d requests", err, queues.Total())
	}
}

// TestCoreCatalogueGapsPurge: Purge without Match checks Visibility as
// Purge with Match does, before clearing anything: a negative one, and one
// under the second the service counts in.
func TestCoreCatalogueGapsPurge(t *testing.T) {
	ctx := t.Context()
	queues := fake.NewQueueService(nil)
	q, p := queues.NewQueueClient("gaps", nil), queues.NewQueueClient("gaps-poison", nil)
	for _, c := range []*azqueue.QueueClient{q, p} {
		if _, err := c.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.EnqueueMessage(ctx, `{"messageId":"1"}`, nil); err != nil {
		t.Fatal(err)
	}
	queues.ResetCounts()
	for _, v := range []time.Duration{-time.Second, 500 * time.Millisecond} {
		_, err := poisonq.New(p, q).Purge(ctx, &poisonq.Options{Visibility: v})
		if !errors.Is(err, consistency.ErrBadOption) || queues.Total() != 0 || queues.Len("gaps-poison") != 1 {
			t.Errorf("Purge with Visibility %v: %v, %d requests, %d messages left; want ErrBadOption, none sent, the message kept",
				v, err, queues.Total(), queues.Len("gaps-poison"))
		}
	}
}

// TestCoreCatalogueGapsExtraShadowsField: an Extra entry named like one of
// the struct's properties used to be dropped silently (the field won); it
// is refused with a typed error, and nothing is sent.
func TestCoreCatalogueGapsExtraShadowsField(t *testing.T) {
	ctx := t.Context()
	type withExtra struct {
		table.Meta
		Name string
		More table.Extra
	}
	tables := fake.NewTableService(nil)
	c := tables.NewClient("gaps", nil)
	if _, err := c.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[withExtra](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	tables.ResetCounts()
	v := &withExtra{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "field",
		More: table.Extra{"Name": {Value: []byte(`"extra"`)}}}
	err = tb.Add(ctx, v, nil)
	var ie *table.InputError
	if !errors.Is(err, table.ErrDuplicateProperty) || !errors.As(err, &ie) || ie.Field != "Name" || tables.Total() != 0 {
		t.Errorf("Add with an Extra entry named like a field: %v, %d requests; want ErrDuplicateProperty on Name, none sent", err, tables.Total())
	}
}
