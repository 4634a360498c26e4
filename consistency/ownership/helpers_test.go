package ownership_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
)

// quiet discards the logs of workers whose handlers fail on purpose.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// queues returns a fake queue service with a work and a poison queue.
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
