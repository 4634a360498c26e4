package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/ownership"
)

// leaseClient returns the SDK's lease client for a blob, with leaseID.
func leaseClient(t *testing.T, bc *azblob.Client, cont, name, leaseID string) *lease.BlobClient {
	t.Helper()
	l, err := lease.NewBlobClient(bc.ServiceClient().NewContainerClient(cont).NewBlobClient(name), &lease.BlobClientOptions{LeaseID: to.Ptr(leaseID)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// requireLeases skips a case, saying why, when env's blob service has no
// leases: the fake's blob gets them in a separate change, and then the
// cases run on it with no edit here.
func requireLeases(t *testing.T, env Env, bc *azblob.Client, cont string) {
	t.Helper()
	if _, err := bc.UploadBuffer(t.Context(), cont, "probe", nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err := leaseClient(t, bc, cont, "probe", "00000000-0000-4000-8000-000000000001").AcquireLease(t.Context(), 15, nil)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == 501 {
		t.Skipf("not run on %s: its blob service has no leases yet (a lease request answered %d %s); the case runs as soon as it does", env.Name, re.StatusCode, re.ErrorCode)
	}
	if err != nil {
		t.Fatalf("acquiring a lease on a fresh blob: %v", err)
	}
}

// leaseStates lists the lease state of each blob of a container.
func leaseStates(t *testing.T, bc *azblob.Client, cont string) map[string]lease.StateType {
	t.Helper()
	out := map[string]lease.StateType{}
	pager := bc.NewListBlobsFlatPager(cont, nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Properties != nil && b.Properties.LeaseState != nil {
				out[*b.Name] = *b.Properties.LeaseState
			}
		}
	}
	return out
}

// killSwitch makes a role's every storage call fail from the moment it is
// thrown, as if its process were gone: nothing is released, its leases run
// out by themselves and its in-flight messages reappear.
type killSwitch struct{ dead atomic.Bool }

var errKilled = errors.New("injected: the process is gone")

type killableQueue struct {
	consistency.Queue
	k *killSwitch
}

func (q killableQueue) EnqueueMessage(ctx context0, s string, o *azqueue.EnqueueMessageOptions) (azqueue.EnqueueMessagesResponse, error) {
	if q.k.dead.Load() {
		return azqueue.EnqueueMessagesResponse{}, errKilled
	}
	return q.Queue.EnqueueMessage(ctx, s, o)
}

func (q killableQueue) DequeueMessages(ctx context0, o *azqueue.DequeueMessagesOptions) (azqueue.DequeueMessagesResponse, error) {
	if q.k.dead.Load() {
		return azqueue.DequeueMessagesResponse{}, errKilled
	}
	return q.Queue.DequeueMessages(ctx, o)
}

func (q killableQueue) UpdateMessage(ctx context0, id, pop, s string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	if q.k.dead.Load() {
		return azqueue.UpdateMessageResponse{}, errKilled
	}
	return q.Queue.UpdateMessage(ctx, id, pop, s, o)
}

func (q killableQueue) DeleteMessage(ctx context0, id, pop string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	if q.k.dead.Load() {
		return azqueue.DeleteMessageResponse{}, errKilled
	}
	return q.Queue.DeleteMessage(ctx, id, pop, o)
}

type killableLease struct {
	ownership.Lease
	k *killSwitch
}

func (l killableLease) AcquireLease(ctx context0, d int32, o *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error) {
	if l.k.dead.Load() {
		return lease.BlobAcquireResponse{}, errKilled
	}
	return l.Lease.AcquireLease(ctx, d, o)
}

func (l killableLease) RenewLease(ctx context0, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	if l.k.dead.Load() {
		return lease.BlobRenewResponse{}, errKilled
	}
	return l.Lease.RenewLease(ctx, o)
}

func (l killableLease) ReleaseLease(ctx context0, o *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error) {
	if l.k.dead.Load() {
		return lease.BlobReleaseResponse{}, errKilled
	}
	return l.Lease.ReleaseLease(ctx, o)
}

type killableStore struct {
	ownership.LeaseStore
	k *killSwitch
}

func (s killableStore) UploadBuffer(ctx context0, c, name string, b []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	if s.k.dead.Load() {
		return azblob.UploadBufferResponse{}, errKilled
	}
	return s.LeaseStore.UploadBuffer(ctx, c, name, b, o)
}

func (s killableStore) DeleteBlob(ctx context0, c, name string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	if s.k.dead.Load() {
		return azblob.DeleteBlobResponse{}, errKilled
	}
	return s.LeaseStore.DeleteBlob(ctx, c, name, o)
}

// eventually polls cond every 100 ms until it holds or limit passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RunOwnership runs the blob-lease behaviour that Role relies on, and
// roles sharing a set of queues through leases.
func RunOwnership(t *testing.T, env Env) {
	t.Run("lease: one holder at a time; renew, release, and expiry free it; listing shows the state", func(t *testing.T) {
		// The capability check runs outside the bubble, so a skip reads as one.
		bc, cont := env.NewContainer(t, nil)
		requireLeases(t, env, bc, cont)
		virtual(env, func(t *testing.T) {
			ctx := t.Context()
			if _, err := bc.UploadBuffer(ctx, cont, "q", nil, nil); err != nil {
				t.Fatal(err)
			}
			a := leaseClient(t, bc, cont, "q", "aaaaaaaa-0000-4000-8000-000000000000")
			b := leaseClient(t, bc, cont, "q", "bbbbbbbb-0000-4000-8000-000000000000")
			if _, err := a.AcquireLease(ctx, 15, nil); err != nil {
				t.Fatal(err)
			}
			var re *azcore.ResponseError
			if _, err := b.AcquireLease(ctx, 15, nil); !errors.As(err, &re) || re.StatusCode != 409 {
				t.Fatalf("a second holder's acquire: %v; want 409", err)
			}
			if _, err := b.RenewLease(ctx, nil); err == nil {
				t.Fatal("a renew with another lease ID succeeded")
			}
			if st := leaseStates(t, bc, cont)["q"]; st != lease.StateTypeLeased {
				t.Fatalf("listed lease state %q while held", st)
			}
			if _, err := a.RenewLease(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := a.ReleaseLease(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := b.AcquireLease(ctx, 15, nil); err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			time.Sleep(16 * time.Second) // past the 15 s lease, not renewed
			if st := leaseStates(t, bc, cont)["q"]; st == lease.StateTypeLeased {
				t.Fatalf("listed lease state %q after expiry", st)
			}
			if _, err := a.AcquireLease(ctx, 15, nil); err != nil {
				t.Fatalf("acquire after the holder's lease expired: %v", err)
			}
		})(t)
	})

	t.Run("roles: three split twelve queues, one is killed, the other two take over its work; nothing lost", func(t *testing.T) {
		// The capability check runs outside the bubble, so a skip reads as one.
		bc, cont := env.NewContainer(t, nil)
		requireLeases(t, env, bc, cont)
		virtual(env, func(t *testing.T) {
			ctx := t.Context()
			const nq, nmsg = 12, 240
			var raw []*azqueue.QueueClient
			var qs []consistency.Queue
			for range nq {
				q := env.NewQueue(t, nil)
				raw = append(raw, q)
				qs = append(qs, q)
			}
			poison := env.NewQueue(t, nil)

			var mu sync.Mutex
			processed := map[string]int{}
			byRole := map[string]int{}
			// Handlers wait until every message is sent, so the kill below
			// finds the victim with most of its work still to do.
			open := make(chan struct{})
			var victimQueues map[string]bool // c's queues at its kill
			takenOver := 0                   // messages of those queues that a and b processed after it
			var sender *consistency.Sender
			newRole := func(name string, k *killSwitch) *ownership.Role {
				var set []ownership.OwnedQueue
				for i, q := range qs {
					set = append(set, ownership.OwnedQueue{Name: fmt.Sprintf("q%02d", i), Queue: killableQueue{q, k}, Poison: killableQueue{poison, k}})
				}
				r, err := ownership.NewRole(killableStore{bc, k}, cont, set, &ownership.RoleOptions{
					Name: name, LeaseDuration: 15 * time.Second, // the shortest lease Renew: time.Second, Logger: quiet,
					Worker: &consistency.WorkerOptions{Concurrency: 2, Visibility: 3 * time.Second, PollInterval: 50 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond, Logger: quiet},
					LeaseFor: func(blobName, id string) (ownership.Lease, error) {
						return killableLease{leaseClient(t, bc, cont, blobName, id), k}, nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				_ = r.Handle("work.v1", func(ctx context0, m *consistency.Message) error {
					select {
					case <-open:
					case <-ctx.Done():
						return ctx.Err()
					}
					select {
					case <-time.After(100 * time.Millisecond):
					case <-ctx.Done():
						return ctx.Err()
					}
					if k.dead.Load() {
						return errKilled // a dead process does no work
					}
					mu.Lock()
					processed[m.Key]++
					byRole[name]++
					if victimQueues[fmt.Sprintf("q%02d", sender.QueueFor(m.Key))] && name != "c" {
						takenOver++
					}
					mu.Unlock()
					return nil
				})
				return r
			}
			type running struct {
				r      *ownership.Role
				k      *killSwitch
				cancel context.CancelFunc
				err    chan error
			}
			start := func(name string) *running {
				k := &killSwitch{}
				rctx, cancel := context.WithCancel(ctx)
				ru := &running{r: newRole(name, k), k: k, cancel: cancel, err: make(chan error, 1)}
				go func() { ru.err <- ru.r.Run(rctx, nil) }()
				return ru
			}
			counts := func(rs ...*running) []int {
				var out []int
				for _, r := range rs {
					out = append(out, len(r.r.Owned()))
				}
				return out
			}

			// One role alone takes every queue; two more join and the three
			// rebalance to four each.
			a := start("a")
			eventually(t, 30*time.Second, "role a alone did not take the 12 queues", func() bool { return len(a.r.Owned()) == nq })
			b, c := start("b"), start("c")
			eventually(t, 60*time.Second, "the roles did not rebalance to 4/4/4", func() bool { return slices.Equal(counts(a, b, c), []int{4, 4, 4}) })
			all := slices.Concat(a.r.Owned(), b.r.Owned(), c.r.Owned())
			slices.Sort(all)
			if len(slices.Compact(all)) != nq {
				t.Fatalf("owned sets overlap: a %v, b %v, c %v", a.r.Owned(), b.r.Owned(), c.r.Owned())
			}

			var err error
			sender, err = consistency.NewShardedSender(qs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range nmsg {
				if err := sender.Send(ctx, "work.v1", fmt.Sprintf("k%03d", i), i, nil); err != nil {
					t.Fatal(err)
				}
			}
			// Kill c while it works: its leases and in-flight messages are left.
			close(open)
			eventually(t, 30*time.Second, "role c processed nothing", func() bool { mu.Lock(); defer mu.Unlock(); return byRole["c"] >= 3 })
			mu.Lock()
			victimQueues = map[string]bool{}
			for _, q := range c.r.Owned() {
				victimQueues[q] = true
			}
			mu.Unlock()
			c.k.dead.Store(true)
			c.cancel()
			<-c.err
			eventually(t, 90*time.Second, "a and b did not take over c's queues (6/6)", func() bool { return slices.Equal(counts(a, b), []int{6, 6}) })
			eventually(t, 10*time.Second, "the dead role's member blob was not deleted", func() bool {
				_, ok := leaseStates(t, bc, cont)["members/c"]
				return !ok
			})
			eventually(t, 90*time.Second, "the queues did not drain", func() bool {
				for _, q := range raw {
					if queueLen(t, q) != 0 {
						return false
					}
				}
				return true
			})
			a.cancel()
			b.cancel()
			for _, r := range []*running{a, b} {
				if err := <-r.err; err != nil {
					t.Fatalf("a surviving role reported: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(processed) != nmsg {
				t.Fatalf("%d of %d messages processed", len(processed), nmsg)
			}
			if takenOver == 0 {
				t.Fatal("the kill left no work behind: the case proved nothing")
			}
			if n := queueLen(t, poison); n != 0 {
				t.Fatalf("%d messages poisoned", n)
			}
			if st := leaseStates(t, bc, cont); st["queues/q00"] == lease.StateTypeLeased {
				t.Fatalf("a queue lease is still held after every role stopped: %v", st)
			}
			t.Logf("%s: processed by a %d, b %d, c %d (before its kill); %d of c's taken over; %d redeliveries", env.Name, byRole["a"], byRole["b"], byRole["c"], takenOver, byRole["a"]+byRole["b"]+byRole["c"]-nmsg)
		})(t)
	})
}
