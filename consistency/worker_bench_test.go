package consistency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
)

// BenchmarkDrain drains 1,000 messages from the fake queue with 16 handler
// slots: messages per second and dequeue requests per message, for
// handlers that return at once and for handlers that take 2 ms.
func BenchmarkDrain(b *testing.B) {
	const n = 1000
	for _, work := range []time.Duration{0, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("handler=%v", work), func(b *testing.B) {
			var dequeues, total int
			for b.Loop() {
				b.StopTimer()
				svc := fake.NewQueueService(nil)
				q, p := svc.NewQueueClient("work", nil), svc.NewQueueClient("poison", nil)
				_, _ = q.Create(context.Background(), nil)
				_, _ = p.Create(context.Background(), nil)
				s := consistency.NewSender(q, nil)
				for i := range n {
					_ = s.Send(context.Background(), "b.v1", fmt.Sprint(i), i, nil)
				}
				w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Logger: quiet})
				_ = w.Handle("b.v1", func(context.Context, *consistency.Message) error {
					if work > 0 {
						time.Sleep(work)
					}
					return nil
				})
				svc.ResetCounts()
				b.StartTimer()
				if st, err := w.Drain(context.Background(), nil); err != nil || st.Processed != n {
					b.Fatalf("%+v %v", st, err)
				}
				dequeues += svc.Count(fake.OpDequeue)
				total += n
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(dequeues)/float64(total), "dequeues/msg")
		})
	}
}
