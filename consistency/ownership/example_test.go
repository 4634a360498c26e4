package ownership_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/ownership"
)

// Three processes share twelve queues: each runs this. Senders route by
// key; each process's Role takes its share of the queues through blob
// leases and works on them, gives some up when another process joins, and
// takes over a dead process's queues when its leases expire. (Not run: it
// needs a storage account or Azurite; the fake's blob has no leases yet.)
func ExampleRole() {
	ctx := context.Background()
	cs := "UseDevelopmentStorage=true" // your connection string
	var set []ownership.OwnedQueue
	var queues []consistency.Queue
	for i := range 12 {
		name := fmt.Sprintf("orders-%02d", i)
		q, _ := azqueue.NewQueueClientFromConnectionString(cs, name, nil)
		p, _ := azqueue.NewQueueClientFromConnectionString(cs, name+"-poison", nil)
		set = append(set, ownership.OwnedQueue{Name: name, Queue: q, Poison: p})
		queues = append(queues, q)
	}
	blobs, _ := azblob.NewClientFromConnectionString(cs, nil)

	// Anywhere: send; the key picks the queue.
	sender, _ := consistency.NewShardedSender(queues, nil)
	_ = sender.Send(ctx, "order.placed.v1", "order-1042", map[string]int{"qty": 3}, nil)

	// In each worker process: one Role on the shared "leases" container.
	role, err := ownership.NewRole(blobs, "leases", set, &ownership.RoleOptions{Name: "worker-a"})
	if err != nil {
		panic(err)
	}
	_ = role.Handle("order.placed.v1", func(ctx context.Context, m *consistency.Message) error {
		return nil // read the source, make the target match
	})
	_ = role.Run(ctx, nil) // until ctx ends; then releases its queues
}
