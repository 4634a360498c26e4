package patterns_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// lossyTable returns a fresh service and a client of its table "people"
// whose request number n loses its response.
func lossyTable(t *testing.T, n int) (*fake.TableService, *aztables.Client) {
	t.Helper()
	svc := fake.NewTableService(nil)
	if _, err := svc.NewClient("people", nil).CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, faults.LoseResponse(n))
	opts.Retry.RetryDelay = time.Millisecond
	svc.ResetCounts()
	return svc, svc.NewClient("people", opts)
}

type person struct {
	table.Meta
	LastName string
	Email    string
}

func TestModelAddAfterALostResponse(t *testing.T) {
	defs := []patterns.IndexDef[person]{{Name: "email", Prefix: "email_", Unique: true, Value: func(p *person) string { return p.Email }}}
	don := func() *person {
		return &person{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, LastName: "Hall", Email: "donh@contoso.com"}
	}

	// Without the option the SDK's retry meets the committed transaction
	// (request 2: the first is OpenModel's read of the indexes' state).
	svc, client := lossyTable(t, 2)
	idx, _ := patterns.OpenModel(context.Background(), tableOf(table.New[person](client, nil)), &patterns.ModelOptions[person]{Name: "idx", Primary: "empid_", Copies: defs})
	if err := idx.Add(t.Context(), don(), nil); !table.Is(err, table.ErrAlreadyExists) || svc.Len("people") != 2 {
		t.Fatalf("plain Add: %v, %d stored", err, svc.Len("people"))
	}

	svc, client = lossyTable(t, 2)
	idx, _ = patterns.OpenModel(context.Background(), tableOf(table.New[person](client, nil)), &patterns.ModelOptions[person]{Name: "idx", Primary: "empid_", Copies: defs})
	v := don()
	if err := idx.Add(t.Context(), v, &table.AddOptions{Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	// OpenModel's read of the state, the transaction, the SDK's retry of
	// it, and the read that finds v stored and gives it the stored ETag.
	if svc.Count(fake.OpBatch) != 2 || svc.Count(fake.OpGetEntity) != 2 || svc.Total() != 4 {
		t.Fatalf("requests: %v", svc.Counts())
	}
	stored, _ := idx.Get(t.Context(), "Sales", "empid_000123", nil)
	if v.ETag == "" || v.ETag != stored.ETag || svc.Len("people") != 2 {
		t.Fatalf("ETag %q, stored %q; %d entities", v.ETag, stored.ETag, svc.Len("people"))
	}
	if got, err := idx.Lookup(t.Context(), "email", "Sales", "donh@contoso.com", nil); err != nil || got.RowKey != "empid_000123" {
		t.Fatalf("Lookup: %v %v", got, err)
	}
	// A different entity under the key stays a conflict.
	other := don()
	other.LastName = "Jones"
	if err := idx.Add(t.Context(), other, &table.AddOptions{Idempotent: true}); !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("different entity: %v", err)
	}
}

func TestModelListAddAfterALostResponse(t *testing.T) {
	model := func(client table.Client) *patterns.Model[person] {
		m, err := patterns.OpenModel(context.Background(), tableOf(table.New[person](client, nil)), &patterns.ModelOptions[person]{Name: "people", Primary: "empid_",
			Lists: []patterns.ListDef[person]{{Name: "lastname", Prefix: "lname_", Value: func(p *person) string { return p.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ben := func() *person {
		return &person{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, LastName: "Jones"}
	}
	// A lost response of the first request after OpenModel's read of the
	// state, the read of the index entity, is harmless: the SDK reads again.
	_, client := lossyTable(t, 2)
	if err := model(client).Add(t.Context(), ben(), nil); err != nil {
		t.Fatalf("Add after a lost read: %v", err)
	}
	// The next request is the transaction: its retry meets the commit.
	_, client = lossyTable(t, 3)
	if err := model(client).Add(t.Context(), ben(), nil); !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("plain Add after a lost transaction response: %v", err)
	}
	svc, client := lossyTable(t, 3)
	m := model(client)
	if err := m.Add(t.Context(), ben(), &table.AddOptions{Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	// Read, transaction, its retry, the settling read.
	if svc.Count(fake.OpBatch) != 2 || svc.Count(fake.OpGetEntity)+svc.Count(fake.OpQueryEntities) < 2 {
		t.Fatalf("requests: %v", svc.Counts())
	}
	if ids, err := m.IDs(t.Context(), "lastname", "Sales", "Jones", nil); err != nil || len(ids) != 1 {
		t.Fatalf("IDs: %v %v", ids, err)
	}
}

func TestLogTailAppendAfterALostResponse(t *testing.T) {
	svc, client := lossyTable(t, 1)
	log, _ := patterns.NewLogTail[person](tableOf(table.New[person](client, nil)), nil)
	if err := log.Append(t.Context(), "empid_000123", &person{Email: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	// The insert, the SDK's retry (409), one read: one entry, not two.
	if svc.Len("people") != 1 || svc.Count(fake.OpInsertEntity) != 2 || svc.Count(fake.OpGetEntity) != 1 {
		t.Fatalf("%d entries; requests %v", svc.Len("people"), svc.Counts())
	}
}

func TestShardedAppendAfterALostResponse(t *testing.T) {
	_, client := lossyTable(t, 1)
	s, _ := patterns.NewSharded[person](tableOf(table.New[person](client, nil)), "events", 4)
	e := &person{Meta: table.Meta{RowKey: "0001"}}
	if err := s.Append(t.Context(), "src", e, nil); !table.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("plain Append: %v", err)
	}
	svc, client := lossyTable(t, 1)
	s, _ = patterns.NewSharded[person](tableOf(table.New[person](client, nil)), "events", 4)
	if err := s.Append(t.Context(), "src", &person{Meta: table.Meta{RowKey: "0001"}}, &table.AddOptions{Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	if svc.Len("people") != 1 {
		t.Fatalf("%d stored", svc.Len("people"))
	}
}

func TestBlobLogFlushAfterALostResponse(t *testing.T) {
	blobs := fake.NewBlobService(nil)
	if _, err := blobs.NewClient(nil).CreateContainer(t.Context(), "logs", nil); err != nil {
		t.Fatal(err)
	}
	l := ledger.New()
	opts := &azblob.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Blob)
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, faults.LoseResponse(1))
	opts.Retry.RetryDelay = time.Millisecond
	at := time.Date(2014, 7, 31, 18, 5, 0, 0, time.UTC)
	log, _ := patterns.NewBlobLog(blobs.NewClient(opts), "logs", "applog", &patterns.BlobLogOptions{Writer: "web1"})
	for i := 0; i < 3; i++ {
		if err := log.AppendAt(t.Context(), at.Add(time.Duration(i)*time.Minute), "GET /", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Flush(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	// The upload, its retry (409), one ranged read of the metadata.
	names := blobs.Names("logs")
	if len(names) != 1 || names[0] != "applog/2014/07/31/1800/web1-000001.log" || l.Total() != 3 {
		t.Fatalf("blobs %q after %d requests:\n%s", names, l.Total(), l)
	}
	// Another writer's blob under the name is not ours: next number.
	log2, _ := patterns.NewBlobLog(blobs.NewClient(nil), "logs", "applog", &patterns.BlobLogOptions{Writer: "web1"})
	_ = log2.AppendAt(t.Context(), at, "GET /other", nil)
	if err := log2.Flush(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if names := blobs.Names("logs"); len(names) != 2 || !strings.HasSuffix(names[1], "web1-000002.log") {
		t.Fatalf("blobs %q", names)
	}
}

// hiddenFor records the visibility timeout each enqueue asks for.
type hiddenFor struct {
	consistency.Queue
	secs []int32
}

func (h *hiddenFor) EnqueueMessage(ctx context.Context, text string, o *azqueue.EnqueueMessageOptions) (azqueue.EnqueueMessagesResponse, error) {
	h.secs = append(h.secs, *o.VisibilityTimeout)
	return h.Queue.EnqueueMessage(ctx, text, o)
}

func TestModelPublishDelay(t *testing.T) {
	ctx := t.Context()
	tables := fake.NewTableService(nil)
	people, lists := tables.NewClient("people", nil), tables.NewClient("lists", nil)
	_, _ = people.CreateTable(ctx, nil)
	_, _ = lists.CreateTable(ctx, nil)
	q := fake.NewQueueService(nil).NewQueueClient("lastnames", nil)
	_, _ = q.Create(ctx, nil)
	rec := &hiddenFor{Queue: q}
	for i, delay := range []time.Duration{0, 2 * time.Second} {
		m, err := patterns.OpenModel(ctx, tableOf(table.New[person](people, nil)), &patterns.ModelOptions[person]{Name: "people", Queue: rec, PublishDelay: delay,
			RemoteLists: []patterns.ListDef[person]{{Name: "lastname", Value: func(p *person) string { return p.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lists", Prefix: "lname_"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(ctx, &person{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i)}, LastName: "Hall"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.secs) != 2 || rec.secs[0] != int32((30*time.Second)/time.Second) || rec.secs[1] != 2 {
		t.Fatalf("messages hidden for %v s", rec.secs)
	}
}
