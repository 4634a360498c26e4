package consistency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/table"
)

// quiet discards the logs of workers whose handlers fail on purpose.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func queues(t *testing.T) (*fake.QueueService, *azqueue.QueueClient, *azqueue.QueueClient) {
	svc := fake.NewQueueService(nil)
	q, p := svc.NewQueueClient("work", nil), svc.NewQueueClient("poison", nil)
	for _, c := range []*azqueue.QueueClient{q, p} {
		if _, err := c.Create(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return svc, q, p
}

// TestLongHandlerKeepsItsMessage: a handler that runs past the visibility
// timeout keeps the message hidden by renewing it, so a second worker never
// runs it, and the newest pop receipt deletes it. Virtual time (synctest):
// the fake queue's clock is time.Now, which the bubble fakes.
func TestLongHandlerKeepsItsMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, q, p := queues(t)
		if err := consistency.NewSender(q, nil).Send(t.Context(), "slow.v1", "k", 1, nil); err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		slow := func(ctx context.Context, m *consistency.Message) error {
			runs.Add(1)
			time.Sleep(5 * time.Second) // 2.5 visibility timeouts
			return nil
		}
		opts := func() *consistency.WorkerOptions {
			return &consistency.WorkerOptions{Visibility: 2 * time.Second, PollInterval: 50 * time.Millisecond, MaxPollInterval: 50 * time.Millisecond}
		}
		a, b := consistency.NewWorker(q, p, opts()), consistency.NewWorker(q, p, opts())
		_ = a.Handle("slow.v1", slow)
		_ = b.Handle("slow.v1", slow)
		runFor(t, 7*time.Second, a, b)
		if runs.Load() != 1 || svc.Len("work") != 0 {
			t.Fatalf("handler ran %d times; %d messages left", runs.Load(), svc.Len("work"))
		}
		if a.Stats().Renewed+b.Stats().Renewed < 2 {
			t.Fatalf("renewals: %d + %d", a.Stats().Renewed, b.Stats().Renewed)
		}
	})
}

// TestShutdownAbandonsCleanly: cancelling Run lets a handler finish within
// the grace; past it the handler is cancelled and its message reappears.
func TestShutdownAbandonsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
		left  int
	}{{"finishes within the grace", 2 * time.Second, 0}, {"abandoned after the grace", 100 * time.Millisecond, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, q, p := queues(t)
				_ = consistency.NewSender(q, nil).Send(t.Context(), "job.v1", "k", 1, nil)
				started := make(chan struct{})
				w := consistency.NewWorker(q, p, &consistency.WorkerOptions{ShutdownGrace: tc.grace, PollInterval: 10 * time.Millisecond})
				_ = w.Handle("job.v1", func(ctx context.Context, m *consistency.Message) error {
					close(started)
					select {
					case <-time.After(500 * time.Millisecond):
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- w.Run(ctx, nil) }()
				<-started
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run: %v", err)
				}
				if svc.Len("work") != tc.left {
					t.Fatalf("%d messages left, want %d", svc.Len("work"), tc.left)
				}
			})
		})
	}
}

func TestLargePayloadTravelsInABlob(t *testing.T) {
	_, q, p := queues(t)
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	if _, err := bc.CreateContainer(t.Context(), "payloads", nil); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("<Jones & Co>", 10000) // 120 KB, 200 KB once XML-escaped
	s := consistency.NewSender(q, &consistency.SenderOptions{Blobs: blobstore.New(bc), Container: "payloads"})
	if err := s.Send(t.Context(), "big.v1", "k", big, nil); err != nil {
		t.Fatal(err)
	}
	if len(blobs.Names("payloads")) != 1 {
		t.Fatal("the payload did not go to a blob")
	}
	var got string
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Blobs: blobstore.New(bc)})
	_ = w.Handle("big.v1", func(ctx context.Context, m *consistency.Message) error { return m.Decode(&got) })
	if _, err := w.Drain(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got != big {
		t.Fatalf("payload of %d bytes arrived as %d", len(big), len(got))
	}
	if len(blobs.Names("payloads")) != 0 {
		t.Fatal("the payload blob outlived its message")
	}
}

func TestBackoffGrowsAndLastErrorTravels(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	svc := fake.NewQueueService(&fake.QueueServiceOptions{Now: clock})
	q, p := svc.NewQueueClient("work", nil), svc.NewQueueClient("poison", nil)
	_, _ = q.Create(t.Context(), nil)
	_, _ = p.Create(t.Context(), nil)
	_ = consistency.NewSender(q, nil).Send(t.Context(), "fail.v1", "k", 1, nil)
	var seen []string
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{MaxDequeues: 3, Logger: quiet})
	_ = w.Handle("fail.v1", func(ctx context.Context, m *consistency.Message) error {
		seen = append(seen, m.LastError)
		return errors.New("boom " + string(rune('0'+m.DequeueCount)))
	})
	var rep *consistency.FailureReport
	for i, wait := range []time.Duration{2 * time.Second, 4 * time.Second, 0} {
		if _, err := w.Drain(t.Context(), nil); !errors.As(err, &rep) || rep.Retried != 1 {
			t.Fatalf("Drain of a failing message: %v; want a report of one retry", err)
		}
		if i < 2 {
			// Hidden for the back-off of its dequeue count: 2 s, then 4 s.
			mu.Lock()
			now = now.Add(wait - time.Millisecond)
			mu.Unlock()
			if d, _ := q.DequeueMessages(t.Context(), &azqueue.DequeueMessagesOptions{VisibilityTimeout: to.Ptr(int32(1))}); len(d.Messages) != 0 {
				t.Fatalf("visible before its back-off of %v", wait)
			}
			mu.Lock()
			now = now.Add(time.Millisecond)
			mu.Unlock()
		}
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	if _, err := w.Drain(t.Context(), nil); !errors.As(err, &rep) || rep.Poisoned != 1 {
		t.Fatalf("Drain of a message past MaxDequeues: %v; want a report of one poisoned", err)
	}
	if strings.Join(seen, "|") != "|boom 1|boom 2" {
		t.Fatalf("last errors seen: %q", seen)
	}
	d, _ := p.DequeueMessages(t.Context(), nil)
	if len(d.Messages) != 1 {
		t.Fatal("not poisoned")
	}
	var rec envelope.PoisonRecord
	_ = json.Unmarshal([]byte(*d.Messages[0].MessageText), &rec)
	if !strings.Contains(rec.Error, "boom 3") || rec.DequeueCount != 4 {
		t.Fatalf("poison record: %+v", rec)
	}
}

func TestHandleRefusesBadRegistrations(t *testing.T) {
	_, q, p := queues(t)
	w := consistency.NewWorker(q, p, nil)
	if err := w.Handle("noversion", func(context.Context, *consistency.Message) error { return nil }); !errors.Is(err, consistency.ErrBadType) {
		t.Fatal(err)
	}
	if err := w.Handle("x.v1", nil); err == nil {
		t.Fatal("nil handler accepted")
	}
	if err := w.Handle("x.v1", func(context.Context, *consistency.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("x.v1", func(context.Context, *consistency.Message) error { return nil }); !errors.Is(err, consistency.ErrDuplicateHandler) {
		t.Fatalf("a second handler for x.v1: %v", err)
	}
}

type emp struct {
	table.Meta
	Name string
}

// TestMoveToBlob archives an entity to a blob: the blob holds its JSON and
// the table no longer holds it; a redelivered message changes nothing.
func TestMoveToBlob(t *testing.T) {
	ctx := t.Context()
	_, q, p := queues(t)
	tables := fake.NewTableService(nil)
	client := tables.NewClient("Current", nil)
	_, _ = client.CreateTable(ctx, nil)
	current, _ := table.New[emp](client, nil)
	if err := current.Add(ctx, &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000456"}, Name: "Employee 456"}, nil); err != nil {
		t.Fatal(err)
	}
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "archive", nil)
	sender := consistency.NewSender(q, nil)
	mover := consistency.NewMover[emp](current, &consistency.BlobTarget[emp]{Blobs: blobstore.New(bc), Container: "archive"}, sender, nil)
	for range 2 { // the second request is a duplicate
		if err := mover.Request(ctx, "Sales", "000456", nil); err != nil {
			t.Fatal(err)
		}
	}
	w := consistency.NewWorker(q, p, nil)
	_ = w.Handle(mover.MessageType(), mover.Process)
	if st, err := w.Drain(ctx, nil); err != nil || st.Processed != 2 {
		t.Fatalf("drain: %+v %v", st, err)
	}
	data, ok := blobs.Blob("archive", "Sales/000456")
	if !ok || !strings.Contains(string(data), `"Name":"Employee 456"`) {
		t.Fatalf("archive blob = %q, %v", data, ok)
	}
	if _, err := current.Get(ctx, "Sales", "000456", nil); !table.Is(err, table.ErrNotFound) {
		t.Fatalf("still in Current: %v", err)
	}
}

// TestFailuresLogThroughTheDefaultLogger: with no Logger a failure is still
// logged at Warn, through slog.Default().
func TestFailuresLogThroughTheDefaultLogger(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn})))
	defer slog.SetDefault(old)
	_, q, p := queues(t)
	_ = consistency.NewSender(q, nil).Send(t.Context(), "fail.v1", "k", 1, nil)
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Backoff: func(int64) time.Duration { return time.Hour }})
	_ = w.Handle("fail.v1", func(context.Context, *consistency.Message) error { return errors.New("disk on fire") })
	_, _ = w.Drain(t.Context(), nil)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "disk on fire") {
		t.Fatalf("default logger got %q", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSlowHandlersPoisonNothing: 360 messages whose handlers each take
// between a third and most of the visibility timeout (virtual time). A
// worker that held more messages than it had free slots let waiting ones
// expire and come back; with MaxDequeues 1 they went to poison.
func TestSlowHandlersPoisonNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 360
		_, q, p := queues(t)
		s := consistency.NewSender(q, nil)
		for i := range n {
			_ = s.Send(t.Context(), "slow.v1", fmt.Sprint(i), i, nil)
		}
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: 16, Visibility: 30 * time.Second, MaxDequeues: 1, Logger: quiet})
		_ = w.Handle("slow.v1", func(ctx context.Context, m *consistency.Message) error {
			time.Sleep(10*time.Second + time.Duration(m.DequeueCount*int64(len(m.Key)))*5*time.Second) // 15 s to 25 s
			return nil
		})
		st, err := w.Drain(t.Context(), nil)
		if err != nil || st.Processed != n || st.Dequeued != n || st.Poisoned != 0 {
			t.Fatalf("stats %+v, %v; want each of %d messages dequeued once and processed", st, err, n)
		}
	})
}

// runFor runs every worker until d has passed.
func runFor(t *testing.T, d time.Duration, workers ...*consistency.Worker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { _ = w.Run(ctx, nil) })
	}
	wg.Wait()
}
