package ownership_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/ownership"
	"github.com/tablekit/tablekit/fake"
)

// memLeases is an in-memory container of lease blobs, on time.Now (so on
// the virtual clock inside a synctest bubble): the Role's logic runs here
// in milliseconds, while conformance runs it on Azurite (and on
// the fake once its blob has leases). Errors are the SDK's own
// *azcore.ResponseError, made by runtime.NewResponseError from a response.
type memLeases struct {
	mu    sync.Mutex
	blobs map[string]*memBlob
}

type memBlob struct {
	holder  string
	dur     time.Duration
	expires time.Time
}

func (b *memBlob) state(now time.Time) lease.StateType {
	switch {
	case b.holder == "":
		return lease.StateTypeAvailable
	case now.Before(b.expires):
		return lease.StateTypeLeased
	}
	return lease.StateTypeExpired
}

func serviceError(status int, code string) error {
	req, _ := http.NewRequest(http.MethodPut, "https://mem.blob.core.windows.net/leases/x", nil)
	h := http.Header{}
	h.Set("x-ms-error-code", code)
	return runtime.NewResponseError(&http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req})
}

func (m *memLeases) UploadBuffer(_ context.Context, _, name string, _ []byte, _ *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.blobs[name]; ok {
		return azblob.UploadBufferResponse{}, serviceError(409, "BlobAlreadyExists")
	}
	m.blobs[name] = &memBlob{}
	return azblob.UploadBufferResponse{}, nil
}

func (m *memLeases) NewListBlobsFlatPager(string, *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse] {
	return runtime.NewPager(runtime.PagingHandler[azblob.ListBlobsFlatResponse]{
		More: func(azblob.ListBlobsFlatResponse) bool { return false },
		Fetcher: func(context.Context, *azblob.ListBlobsFlatResponse) (azblob.ListBlobsFlatResponse, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var items []*container.BlobItem
			for name, b := range m.blobs {
				items = append(items, &container.BlobItem{Name: to.Ptr(name), Properties: &container.BlobProperties{LeaseState: to.Ptr(b.state(time.Now()))}})
			}
			var r azblob.ListBlobsFlatResponse
			r.Segment = &container.BlobFlatListSegment{BlobItems: items}
			return r, nil
		},
	})
}

func (m *memLeases) ServiceClient() *service.Client { return nil }

func (m *memLeases) DeleteBlob(_ context.Context, _, name string, _ *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[name]
	switch {
	case !ok:
		return azblob.DeleteBlobResponse{}, serviceError(404, "BlobNotFound")
	case b.state(time.Now()) == lease.StateTypeLeased:
		return azblob.DeleteBlobResponse{}, serviceError(412, "LeaseIdMissing")
	}
	delete(m.blobs, name)
	return azblob.DeleteBlobResponse{}, nil
}

func (m *memLeases) leaseFor(name, id string) (ownership.Lease, error) {
	return &memLease{m: m, name: name, id: id}, nil
}

type memLease struct {
	m        *memLeases
	name, id string
}

func (l *memLease) AcquireLease(_ context.Context, secs int32, _ *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error) {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	b, ok := l.m.blobs[l.name]
	switch {
	case !ok:
		return lease.BlobAcquireResponse{}, serviceError(404, "BlobNotFound")
	case b.state(time.Now()) == lease.StateTypeLeased && b.holder != l.id:
		return lease.BlobAcquireResponse{}, serviceError(409, "LeaseAlreadyPresent")
	}
	b.holder, b.dur = l.id, time.Duration(secs)*time.Second
	b.expires = time.Now().Add(b.dur)
	return lease.BlobAcquireResponse{}, nil
}

func (l *memLease) RenewLease(context.Context, *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	b := l.m.blobs[l.name]
	if b == nil || b.holder != l.id {
		return lease.BlobRenewResponse{}, serviceError(409, "LeaseIdMismatchWithLeaseOperation")
	}
	b.expires = time.Now().Add(b.dur) // an expired lease nobody took renews, as on the service
	return lease.BlobRenewResponse{}, nil
}

func (l *memLease) ReleaseLease(context.Context, *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error) {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	b := l.m.blobs[l.name]
	if b == nil || b.holder != l.id {
		return lease.BlobReleaseResponse{}, serviceError(409, "LeaseIdMismatchWithLeaseOperation")
	}
	b.holder = ""
	return lease.BlobReleaseResponse{}, nil
}

// deadLease is a dead process's lease calls: all fail, nothing is released.
type deadLease struct {
	ownership.Lease
	dead *atomic.Bool
}

var errDead = errors.New("the process is gone")

func (l deadLease) AcquireLease(ctx context.Context, s int32, o *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error) {
	if l.dead.Load() {
		return lease.BlobAcquireResponse{}, errDead
	}
	return l.Lease.AcquireLease(ctx, s, o)
}

func (l deadLease) RenewLease(ctx context.Context, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	if l.dead.Load() {
		return lease.BlobRenewResponse{}, errDead
	}
	return l.Lease.RenewLease(ctx, o)
}

func (l deadLease) ReleaseLease(ctx context.Context, o *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error) {
	if l.dead.Load() {
		return lease.BlobReleaseResponse{}, errDead
	}
	return l.Lease.ReleaseLease(ctx, o)
}

// waitFor sleeps in steps of 100 ms of (virtual) time until cond holds,
// and returns how long that took; it fails the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// TestRolesSplitRebalanceAndFailOver, in virtual time: one role takes all
// twelve queues, two join and the three settle at four each, messages
// flow, one role dies without releasing anything, and the other two take
// its queues within LeaseDuration + 2 Renew and finish its messages.
func TestRolesSplitRebalanceAndFailOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		svc := fake.NewQueueService(nil)
		mem := &memLeases{blobs: map[string]*memBlob{}}
		var set []ownership.OwnedQueue
		var qs []consistency.Queue
		poison := svc.NewQueueClient("poison", nil)
		_, _ = poison.Create(ctx, nil)
		for i := range 12 {
			q := svc.NewQueueClient(fmt.Sprintf("q%02d", i), nil)
			_, _ = q.Create(ctx, nil)
			set = append(set, ownership.OwnedQueue{Name: fmt.Sprintf("q%02d", i), Queue: q, Poison: poison})
			qs = append(qs, q)
		}
		var mu sync.Mutex
		done := map[string]int{}
		type role struct {
			r      *ownership.Role
			dead   atomic.Bool
			cancel context.CancelFunc
			err    chan error
		}
		start := func(name string) *role {
			ro := &role{err: make(chan error, 1)}
			r, err := ownership.NewRole(mem, "leases", set, &ownership.RoleOptions{
				Name: name, LeaseDuration: 15 * time.Second, Logger: quiet,
				Worker: &consistency.WorkerOptions{Concurrency: 2, Visibility: 5 * time.Second, Logger: quiet},
				LeaseFor: func(b, id string) (ownership.Lease, error) {
					l, _ := mem.leaseFor(b, id)
					return deadLease{l, &ro.dead}, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Handle("job.v1", func(ctx context.Context, m *consistency.Message) error {
				time.Sleep(time.Second)
				if ro.dead.Load() {
					return errDead
				}
				mu.Lock()
				done[m.Key]++
				mu.Unlock()
				return nil
			})
			rctx, cancel := context.WithCancel(ctx)
			ro.r, ro.cancel = r, cancel
			go func() { ro.err <- r.Run(rctx, nil) }()
			return ro
		}
		counts := func(rs ...*role) []int {
			var out []int
			for _, r := range rs {
				out = append(out, len(r.r.Owned()))
			}
			return out
		}
		a := start("a")
		waitFor(t, 10*time.Second, "a alone did not take 12", func() bool { return len(a.r.Owned()) == 12 })
		b, c := start("b"), start("c")
		took := waitFor(t, time.Minute, "no 4/4/4", func() bool { return slices.Equal(counts(a, b, c), []int{4, 4, 4}) })
		t.Logf("rebalanced to 4/4/4 in %v after two roles joined", took)

		sender, _ := consistency.NewShardedSender(qs, nil)
		for i := range 120 {
			_ = sender.Send(ctx, "job.v1", fmt.Sprint(i), i, nil)
		}
		time.Sleep(1500 * time.Millisecond) // c is mid-work
		c.dead.Store(true)
		c.cancel()
		<-c.err
		failover := waitFor(t, time.Minute, "a and b did not take c's queues", func() bool { return slices.Equal(counts(a, b), []int{6, 6}) })
		if failover > 15*time.Second+2*5*time.Second {
			t.Fatalf("failover took %v; want at most LeaseDuration + 2 Renew", failover)
		}
		t.Logf("a and b held c's queues %v after its death", failover)
		mem.mu.Lock()
		_, cBlob := mem.blobs["members/c"]
		mem.mu.Unlock()
		if cBlob {
			t.Fatal("the dead role's member blob is still there")
		}
		waitFor(t, time.Minute, "the queues did not drain", func() bool {
			for i := range 12 {
				if svc.Len(fmt.Sprintf("q%02d", i)) != 0 {
					return false
				}
			}
			return true
		})
		a.cancel()
		b.cancel()
		for _, r := range []*role{a, b} {
			if err := <-r.err; err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(done) != 120 || svc.Len("poison") != 0 {
			t.Fatalf("%d of 120 processed, %d poisoned", len(done), svc.Len("poison"))
		}
		for name, b := range mem.blobs {
			if strings.HasPrefix(name, "queues/") && b.state(time.Now()) == lease.StateTypeLeased {
				t.Fatalf("%s still leased after every live role stopped and released", name)
			}
		}
	})
}

// flakyRenew fails the renewals it is told to, with err.
type flakyRenew struct {
	ownership.Lease
	mu   *sync.Mutex
	fail *[]error // next renewals' errors; nil entries succeed
}

func (l flakyRenew) RenewLease(ctx context.Context, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	l.mu.Lock()
	var err error
	if len(*l.fail) > 0 {
		err, *l.fail = (*l.fail)[0], (*l.fail)[1:]
	}
	l.mu.Unlock()
	if err != nil {
		return lease.BlobRenewResponse{}, err
	}
	return l.Lease.RenewLease(ctx, o)
}

// TestRoleRenewalFailures: a transient renewal failure (no answer from the
// service) with time left on the lease keeps the queue; a refusal from the
// service (409: another lease ID) gives it up at once.
func TestRoleRenewalFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, q, p := queues(t)
		mem := &memLeases{blobs: map[string]*memBlob{}}
		var mu sync.Mutex
		var fail []error
		r, err := ownership.NewRole(mem, "leases", []ownership.OwnedQueue{{Name: "q0", Queue: q, Poison: p}}, &ownership.RoleOptions{
			Name: "a", LeaseDuration: 15 * time.Second, Renew: 5 * time.Second, Logger: quiet, Worker: &consistency.WorkerOptions{Logger: quiet},
			LeaseFor: func(b, id string) (ownership.Lease, error) {
				l, _ := mem.leaseFor(b, id)
				if b == "members/a" {
					return l, nil
				}
				return flakyRenew{l, &mu, &fail}, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- r.Run(ctx, nil) }()
		waitFor(t, 10*time.Second, "q0 not taken", func() bool { return len(r.Owned()) == 1 })
		mu.Lock()
		fail = []error{errDead} // one lost renewal: 10 s of the lease are left
		mu.Unlock()
		time.Sleep(11 * time.Second) // two rounds
		if len(r.Owned()) != 1 {
			t.Fatal("a transient renewal failure gave the queue up")
		}
		mu.Lock()
		fail = []error{serviceError(409, "LeaseIdMismatchWithLeaseOperation")}
		mu.Unlock()
		time.Sleep(5100 * time.Millisecond) // the next round
		if len(r.Owned()) != 0 {
			t.Fatal("a refused renewal kept the queue")
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}

// countingStore counts the lease container's requests.
type countingStore struct {
	*memLeases
	n *atomic.Int64
}

func (c countingStore) NewListBlobsFlatPager(name string, o *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse] {
	c.n.Add(1) // one page: one request
	return c.memLeases.NewListBlobsFlatPager(name, o)
}

func (c countingStore) UploadBuffer(ctx context.Context, cont, name string, b []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error) {
	c.n.Add(1)
	return c.memLeases.UploadBuffer(ctx, cont, name, b, o)
}

type countingLease struct {
	ownership.Lease
	n *atomic.Int64
}

func (l countingLease) AcquireLease(ctx context.Context, s int32, o *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error) {
	l.n.Add(1)
	return l.Lease.AcquireLease(ctx, s, o)
}

func (l countingLease) RenewLease(ctx context.Context, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	l.n.Add(1)
	return l.Lease.RenewLease(ctx, o)
}

func (l countingLease) ReleaseLease(ctx context.Context, o *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error) {
	l.n.Add(1)
	return l.Lease.ReleaseLease(ctx, o)
}

// TestRoleIdleRequestRate: three idle roles on twelve empty queues, with
// the defaults (30 s leases renewed every 10 s), for an hour of virtual
// time. Each role's round is one listing, its member renewal and one
// renewal per owned queue (6 requests per 10 s with 4 queues); each owned
// queue's idle worker adds one dequeue per 5 s.
func TestRoleIdleRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		svc := fake.NewQueueService(nil)
		mem := &memLeases{blobs: map[string]*memBlob{}}
		var blobReqs atomic.Int64
		store := countingStore{mem, &blobReqs}
		var set []ownership.OwnedQueue
		poison := svc.NewQueueClient("poison", nil)
		_, _ = poison.Create(ctx, nil)
		for i := range 12 {
			q := svc.NewQueueClient(fmt.Sprintf("q%02d", i), nil)
			_, _ = q.Create(ctx, nil)
			set = append(set, ownership.OwnedQueue{Name: fmt.Sprintf("q%02d", i), Queue: q, Poison: poison})
		}
		svc.ResetCounts()
		rctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		var wg sync.WaitGroup
		var roles []*ownership.Role
		for _, name := range []string{"a", "b", "c"} {
			r, err := ownership.NewRole(store, "leases", set, &ownership.RoleOptions{Name: name, Logger: quiet,
				Worker: &consistency.WorkerOptions{Logger: quiet},
				LeaseFor: func(b, id string) (ownership.Lease, error) {
					l, _ := mem.leaseFor(b, id)
					return countingLease{l, &blobReqs}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			roles = append(roles, r)
			wg.Add(1)
			go func() { defer wg.Done(); _ = r.Run(rctx, nil) }()
		}
		time.Sleep(59 * time.Minute)
		var owned []int
		for _, r := range roles {
			owned = append(owned, len(r.Owned()))
		}
		wg.Wait()
		perRole := func(n int64) float64 { return float64(n) / 3 / 3600 }
		leaseRate, queueRate := perRole(blobReqs.Load()), perRole(int64(svc.Total()))
		t.Logf("idle hour, 3 roles, 12 queues, owned %v: per role %.2f lease-container requests/s, %.2f queue requests/s", owned, leaseRate, queueRate)
		if !slices.Equal(owned, []int{4, 4, 4}) {
			t.Fatalf("owned %v", owned)
		}
		// 6 per 10 s = 0.6/s; 4 idle queues at one dequeue per 5 s = 0.8/s.
		if leaseRate < 0.55 || leaseRate > 0.7 || queueRate < 0.75 || queueRate > 0.9 {
			t.Fatalf("per role: %.2f lease requests/s (want about 0.6), %.2f queue requests/s (want about 0.8)", leaseRate, queueRate)
		}
	})
}
