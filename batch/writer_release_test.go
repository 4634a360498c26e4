package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/testenv"
)

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
	started := &startedOps{}
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = []policy.Policy{started}
	_, c := newFake(t, opts)
	writerBoundHolds(t, c, started)
}

// The same against Azurite.
func TestWriterBoundHoldsThroughoutAWriteOnAzurite(t *testing.T) {
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
	sum, err := batch.NewWriter(c, &batch.WriterOptions{Parallelism: 1, MaxBufferedBytes: 1}).Write(t.Context(), ops)
	if err != nil || sum.Operations != n {
		t.Fatalf("write: %+v %v", sum, err)
	}
	if worst > 2 {
		t.Errorf("up to %d operations held unsent with a bound smaller than one operation, want at most 2", worst)
	}
}
