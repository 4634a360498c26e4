package batch_test

import (
	"fmt"
	"iter"
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
)

// roundRobin yields n Adds over parts partitions, one partition after the
// other: the order that keeps every partition's transaction open longest.
func roundRobin(n, parts int, payload string) iter.Seq[batch.Op] {
	return func(yield func(batch.Op) bool) {
		for i := range n {
			e := ev(fmt.Sprintf("p%05d", i%parts), i)
			e.Payload = payload
			if !yield(batch.Add(e)) {
				return
			}
		}
	}
}

// The first request leaves while the writer has been handed at most 2,000
// entities, even when they spread over 1,000 partitions and no partition's
// transaction is full yet. The input stops at entity 2,001 until a request
// reaches the service: a writer that waits for fuller transactions never
// sends, and the test fails.
func TestWriterSendsBeforeItHasEverything(t *testing.T) {
	deadline(t, heavyDeadline)
	svc, c := newFake(t, nil)
	yielded := 0
	ops := func(yield func(batch.Op) bool) {
		for op := range roundRobin(5_000, 1000, "x") {
			if svc.Count(fake.OpBatch) == 0 && yielded == 2000 {
				deadline := time.Now().Add(10 * time.Second)
				for svc.Count(fake.OpBatch) == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if svc.Count(fake.OpBatch) == 0 {
					t.Errorf("no request after 2,000 entities over 1,000 partitions were handed over")
					return
				}
			}
			yielded++
			if !yield(op) {
				return
			}
		}
	}
	sum, err := batch.NewWriter(c, nil).Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != 5_000 {
		t.Fatalf("write: %+v %v", sum, err)
	}
	// Only the start is partial: 8 transactions (one per sender) of the
	// first 2,000 entities, then every partition's 5 in one more.
	if sum.Transactions > 1000+8 {
		t.Errorf("%d transactions for 5 entities in each of 1,000 partitions, want at most 1,008", sum.Transactions)
	}
}

// The writer holds at most MaxBufferedBytes of encoded operations that are
// not in flight, whatever the number of partitions.
func TestWriterKeepsItsMemoryBound(t *testing.T) {
	deadline(t, heavyDeadline)
	for _, parts := range []int{10, 300, 1000} {
		svc, c := newFake(t, nil)
		const budget = 128 << 10
		w := batch.NewWriter(c, &batch.WriterOptions{MaxBufferedBytes: budget})
		sum, err := w.Write(t.Context(), roundRobin(3_000, parts, "the quick brown fox jumps over the lazy dog"), nil)
		if err != nil || sum.Operations != 3_000 {
			t.Fatalf("%d partitions: %+v %v", parts, sum, err)
		}
		if sum.PeakBufferedBytes > budget {
			t.Errorf("%d partitions: held %d bytes at the peak, over the %d bound", parts, sum.PeakBufferedBytes, budget)
		}
		if sum.PeakBufferedBytes == 0 {
			t.Errorf("%d partitions: PeakBufferedBytes not measured", parts)
		}
		t.Logf("%d partitions: peak %d bytes, %d transactions, %d requests", parts, sum.PeakBufferedBytes, sum.Transactions, svc.Count(fake.OpBatch))
	}
}
