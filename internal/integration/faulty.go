package integration

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/table"
)

// errInjected is a failure the test made: a dropped connection.
var errInjected = errors.New("injected fault: connection reset")

// chaos decides, with a seeded source, which calls fail and how: before
// the call reaches the service, or after it (the write happened, the
// response was lost).
type chaos struct {
	mu       sync.Mutex
	rnd      *rand.Rand
	fraction float64
	before   int
	after    int
}

func newChaos(seed uint64, fraction float64) *chaos {
	return &chaos{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), fraction: fraction}
}

// roll returns 0 (pass), 1 (fail before) or 2 (fail after).
func (c *chaos) roll() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rnd.Float64() >= c.fraction {
		return 0
	}
	if c.rnd.IntN(2) == 0 {
		c.before++
		return 1
	}
	c.after++
	return 2
}

func wrap[R any](c *chaos, call func() (R, error)) (R, error) {
	var zero R
	switch c.roll() {
	case 1:
		return zero, errInjected
	case 2:
		_, _ = call()
		return zero, errInjected
	}
	return call()
}

// faultyTable is a table.Client whose calls fail at random.
type faultyTable struct {
	table.Client
	c *chaos
}

func (f faultyTable) AddEntity(ctx context.Context, e []byte, o *aztables.AddEntityOptions) (aztables.AddEntityResponse, error) {
	return wrap(f.c, func() (aztables.AddEntityResponse, error) { return f.Client.AddEntity(ctx, e, o) })
}
func (f faultyTable) GetEntity(ctx context.Context, pk, rk string, o *aztables.GetEntityOptions) (aztables.GetEntityResponse, error) {
	return wrap(f.c, func() (aztables.GetEntityResponse, error) { return f.Client.GetEntity(ctx, pk, rk, o) })
}
func (f faultyTable) UpsertEntity(ctx context.Context, e []byte, o *aztables.UpsertEntityOptions) (aztables.UpsertEntityResponse, error) {
	return wrap(f.c, func() (aztables.UpsertEntityResponse, error) { return f.Client.UpsertEntity(ctx, e, o) })
}
func (f faultyTable) UpdateEntity(ctx context.Context, e []byte, o *aztables.UpdateEntityOptions) (aztables.UpdateEntityResponse, error) {
	return wrap(f.c, func() (aztables.UpdateEntityResponse, error) { return f.Client.UpdateEntity(ctx, e, o) })
}
func (f faultyTable) DeleteEntity(ctx context.Context, pk, rk string, o *aztables.DeleteEntityOptions) (aztables.DeleteEntityResponse, error) {
	return wrap(f.c, func() (aztables.DeleteEntityResponse, error) { return f.Client.DeleteEntity(ctx, pk, rk, o) })
}
func (f faultyTable) NewListEntitiesPager(o *aztables.ListEntitiesOptions) *runtime.Pager[aztables.ListEntitiesResponse] {
	return f.Client.NewListEntitiesPager(o)
}

// faultyQueue is a consistency.Queue whose calls fail at random.
type faultyQueue struct {
	consistency.Queue
	c *chaos
}

func (f faultyQueue) EnqueueMessage(ctx context.Context, s string, o *azqueue.EnqueueMessageOptions) (azqueue.EnqueueMessagesResponse, error) {
	return wrap(f.c, func() (azqueue.EnqueueMessagesResponse, error) { return f.Queue.EnqueueMessage(ctx, s, o) })
}
func (f faultyQueue) DequeueMessages(ctx context.Context, o *azqueue.DequeueMessagesOptions) (azqueue.DequeueMessagesResponse, error) {
	return wrap(f.c, func() (azqueue.DequeueMessagesResponse, error) { return f.Queue.DequeueMessages(ctx, o) })
}
func (f faultyQueue) UpdateMessage(ctx context.Context, id, pop, s string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	return wrap(f.c, func() (azqueue.UpdateMessageResponse, error) { return f.Queue.UpdateMessage(ctx, id, pop, s, o) })
}
func (f faultyQueue) DeleteMessage(ctx context.Context, id, pop string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	return wrap(f.c, func() (azqueue.DeleteMessageResponse, error) { return f.Queue.DeleteMessage(ctx, id, pop, o) })
}

// stepKiller is a table.Client that dies (fails without sending) at the
// k-th call it sees, once: a handler killed between two steps.
type stepKiller struct {
	table.Client
	mu   *sync.Mutex
	n    *int
	kill int
}

func (s stepKiller) die() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.n++
	return *s.n == s.kill
}

func (s stepKiller) GetEntity(ctx context.Context, pk, rk string, o *aztables.GetEntityOptions) (aztables.GetEntityResponse, error) {
	if s.die() {
		return aztables.GetEntityResponse{}, context.Canceled
	}
	return s.Client.GetEntity(ctx, pk, rk, o)
}
func (s stepKiller) UpsertEntity(ctx context.Context, e []byte, o *aztables.UpsertEntityOptions) (aztables.UpsertEntityResponse, error) {
	if s.die() {
		return aztables.UpsertEntityResponse{}, context.Canceled
	}
	return s.Client.UpsertEntity(ctx, e, o)
}
func (s stepKiller) DeleteEntity(ctx context.Context, pk, rk string, o *aztables.DeleteEntityOptions) (aztables.DeleteEntityResponse, error) {
	if s.die() {
		return aztables.DeleteEntityResponse{}, context.Canceled
	}
	return s.Client.DeleteEntity(ctx, pk, rk, o)
}
