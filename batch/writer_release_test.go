package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/testenv"
)

// A transaction the Writer has sent, and the values in it, are garbage
// once its answer is in: the Writer keeps nothing of a partition it is not
// working on. Otherwise its memory grows with the partitions seen, one
// transaction each (100,000 partitions of one entity held them all).
func TestWriterReleasesSentTransactions(t *testing.T) {
	deadline(t, writerDeadline)
	_, c := newFake(t, nil)
	writerReleases(t, c)
}

// The same against Azurite.
func TestWriterReleasesSentTransactionsOnAzurite(t *testing.T) {
	deadline(t, heavyDeadline)
	writerReleases(t, testenv.NewTable(t, "release"))
}

func writerReleases(t *testing.T, c *aztables.Client) {
	const parts = 40
	var committed atomic.Int64
	watched := make([]weak.Pointer[Event], 0, parts)
	var left int
	ops := func(yield func(batch.Op) bool) {
		// One entity in each of parts partitions; the tiny memory bound
		// sends each alone.
		for i := range parts {
			e := ev(fmt.Sprintf("p%03d", i), i)
			watched = append(watched, weak.Make(e))
			if !yield(batch.Add(e)) {
				return
			}
		}
		// Once all but the last are committed (the last may still wait
		// in the writer), they must be collectable.
		deadline := time.Now().Add(20 * time.Second)
		for committed.Load() < parts-1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		for _, w := range watched[:parts-1] {
			if w.Value() != nil {
				left++
			}
		}
		// One more partition, so that the write goes on after the check.
		yield(batch.Add(ev("q", 0)))
	}
	w := batch.NewWriter(c, &batch.WriterOptions{
		Parallelism:      1,
		MaxBufferedBytes: 1,
		Progress:         func(s batch.Summary) { committed.Store(int64(s.Operations)) },
	})
	sum, err := w.Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != parts+1 {
		t.Fatalf("write: %+v %v", sum, err)
	}
	if left > 0 {
		t.Errorf("%d of %d committed values still referenced during the write: the Writer holds sent transactions", left, parts-1)
	}
}

// startedOps counts the operations of every $batch request that reaches
// the transport, as it starts.
type startedOps struct{ n atomic.Int64 }

func (s *startedOps) Do(req *policy.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Raw().URL.Path, "$batch") && req.Body() != nil {
		body, _ := io.ReadAll(req.Body())
		_ = req.RewindBody()
		s.n.Add(int64(bytes.Count(body, []byte("Content-Type: application/http"))))
	}
	return req.Next()
}

// MaxBufferedBytes holds however long the write: with a bound smaller than
// one operation, each operation goes to a sender before the next is held,
// so when operation k is handed over at least k-2 have started (one may be
// on its way to the transport, one held). The Writer's count of held bytes
// must come back to zero as transactions leave; a count that drifts below
// the bytes really held lets the open transactions grow without bound.
func TestWriterBoundHoldsThroughoutAWrite(t *testing.T) {
	deadline(t, writerDeadline)
	started := &startedOps{}
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = []policy.Policy{started}
	_, c := newFake(t, opts)
	writerBoundHolds(t, c, started)
}

// The same against Azurite.
func TestWriterBoundHoldsThroughoutAWriteOnAzurite(t *testing.T) {
	deadline(t, heavyDeadline)
	started := &startedOps{}
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = []policy.Policy{started}
	svc, err := aztables.NewServiceClientFromConnectionString(testenv.ConnectionString(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName("bound")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	writerBoundHolds(t, svc.NewClient(name), started)
}

func writerBoundHolds(t *testing.T, c *aztables.Client, started *startedOps) {
	const n = 60
	worst := 0
	ops := func(yield func(batch.Op) bool) {
		// A writer that holds more would wait here for ever: the wait
		// gives up after a few seconds in all.
		deadline := time.Now().Add(3 * time.Second)
		for i := range n {
			// Operation i is handed over now: i before it.
			for int(started.n.Load()) < i-2 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			worst = max(worst, i-int(started.n.Load()))
			if !yield(batch.Add(ev(fmt.Sprintf("p%03d", i), i))) {
				return
			}
		}
	}
	sum, err := batch.NewWriter(c, &batch.WriterOptions{Parallelism: 1, MaxBufferedBytes: 1}).Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != n {
		t.Fatalf("write: %+v %v", sum, err)
	}
	if worst > 2 {
		t.Errorf("up to %d operations held unsent with a bound smaller than one operation, want at most 2", worst)
	}
}
