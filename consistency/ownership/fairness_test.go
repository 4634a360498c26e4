package ownership_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/ownership"
	"github.com/tablekit/tablekit/fake"
)

// fleet runs roles on one memLeases container and one set of fake queues,
// inside a synctest bubble.
type fleet struct {
	t     *testing.T
	mem   *memLeases
	set   []ownership.OwnedQueue
	lease time.Duration
	renew time.Duration
	roles []*fleetRole
}

type fleetRole struct {
	name   string
	r      *ownership.Role
	dead   atomic.Bool
	cancel context.CancelFunc
	err    chan error
}

func newFleet(t *testing.T, queues int) *fleet {
	ctx := t.Context()
	svc := fake.NewQueueService(nil)
	f := &fleet{t: t, mem: &memLeases{blobs: map[string]*memBlob{}}, lease: 15 * time.Second, renew: 5 * time.Second}
	poison := svc.NewQueueClient("poison", nil)
	_, _ = poison.Create(ctx, nil)
	for i := range queues {
		q := svc.NewQueueClient(fmt.Sprintf("q%02d", i), nil)
		_, _ = q.Create(ctx, nil)
		f.set = append(f.set, ownership.OwnedQueue{Name: fmt.Sprintf("q%02d", i), Queue: q, Poison: poison})
	}
	return f
}

func (f *fleet) start(name string) *fleetRole {
	fr := &fleetRole{name: name, err: make(chan error, 1)}
	r, err := ownership.NewRole(f.mem, "leases", f.set, &ownership.RoleOptions{
		Name: name, LeaseDuration: f.lease, Renew: f.renew, Logger: quiet,
		Worker: &consistency.WorkerOptions{Logger: quiet},
		LeaseFor: func(b, id string) (ownership.Lease, error) {
			l, _ := f.mem.leaseFor(b, id)
			return deadLease{l, &fr.dead}, nil
		},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.t.Context())
	fr.r, fr.cancel = r, cancel
	go func() { fr.err <- r.Run(ctx, nil) }()
	f.roles = append(f.roles, fr)
	return fr
}

// kill stops a role as a SIGKILL would: its lease calls fail from now on,
// so it releases nothing and its leases run out.
func (f *fleet) kill(fr *fleetRole) {
	fr.dead.Store(true)
	fr.cancel()
	<-fr.err
}

func (f *fleet) live() []*fleetRole {
	var out []*fleetRole
	for _, fr := range f.roles {
		if !fr.dead.Load() {
			out = append(out, fr)
		}
	}
	return out
}

// fair reports whether every queue is held by exactly one live role and
// each live role holds ⌊queues/live⌋ or ⌈queues/live⌉ of them, and
// describes the holdings.
func (f *fleet) fair() (bool, string) {
	live := f.live()
	lo := len(f.set) / len(live)
	hi := (len(f.set) + len(live) - 1) / len(live)
	seen := map[string]int{}
	ok := true
	var desc []string
	for _, fr := range live {
		owned := fr.r.Owned()
		desc = append(desc, fmt.Sprintf("%s:%d", fr.name, len(owned)))
		if len(owned) < lo || len(owned) > hi {
			ok = false
		}
		for _, q := range owned {
			seen[q]++
		}
	}
	if len(seen) != len(f.set) {
		ok = false
	}
	for _, n := range seen {
		if n != 1 {
			ok = false
		}
	}
	return ok, strings.Join(desc, " ")
}

// converge waits until the holdings are fair, for at most LeaseDuration +
// Renew, then checks that they stay fair for two more rounds.
func (f *fleet) converge(after string) time.Duration {
	f.t.Helper()
	bound := f.lease + f.renew
	start := time.Now()
	for {
		ok, desc := f.fair()
		if ok {
			break
		}
		if time.Since(start) > bound {
			f.t.Fatalf("%s: not a fair share after %v (LeaseDuration + Renew): %s", after, bound, desc)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(2 * f.renew)
	if ok, desc := f.fair(); !ok {
		f.t.Fatalf("%s: fair after %v, then not: %s", after, took, desc)
	}
	return took
}

func (f *fleet) stop() {
	for _, fr := range f.live() {
		fr.cancel()
		if err := <-fr.err; err != nil {
			f.t.Error(err)
		}
	}
}

// TestRolesConvergeToAFairShare, in virtual time, on 8 queues: after every
// change of the membership — 4 roles starting together, 2 more joining, one
// dying without releasing anything, another joining — every live role
// holds ⌊8/live⌋ or ⌈8/live⌉ queues, each queue one owner, within the
// lease period plus one renewal, and keeps that share. With 6 roles the
// share is 1 or 2: rounding up alone would let four roles keep 2 each and
// two keep none.
func TestRolesConvergeToAFairShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		for _, name := range []string{"p0", "p1", "p2", "p3"} {
			f.start(name)
		}
		t.Logf("4 roles started together: fair in %v", f.converge("4 roles started together"))
		f.start("p4")
		f.start("p5")
		t.Logf("2 roles joined: fair in %v", f.converge("2 roles joined 4"))
		// The victim holds queues: kill the one holding the most.
		victim := slices.MaxFunc(f.live(), func(a, b *fleetRole) int { return len(a.r.Owned()) - len(b.r.Owned()) })
		f.kill(victim)
		t.Logf("%s killed holding queues: fair in %v", victim.name, f.converge("a role killed"))
		f.start("p6")
		t.Logf("a role joined: fair in %v", f.converge("a role joined after the kill"))
		f.stop()
	})
}

// TestRolesShareUnevenSets: the fair share for every count of roles from
// 1 to 7 on 5 queues (more roles than queues leaves some with none).
func TestRolesShareUnevenSets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 5)
		for i := range 7 {
			f.start(fmt.Sprintf("r%d", i))
			f.converge(fmt.Sprintf("%d roles", i+1))
		}
		f.stop()
	})
}

// stampedLease records when its blob's lease was released and acquired.
type stampedLease struct {
	ownership.Lease
	name  string
	mu    *sync.Mutex
	stamp map[string][]time.Time // "release "+blob or "acquire "+blob
}

func (l stampedLease) AcquireLease(ctx context.Context, s int32, o *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error) {
	resp, err := l.Lease.AcquireLease(ctx, s, o)
	if err == nil {
		l.mu.Lock()
		l.stamp["acquire "+l.name] = append(l.stamp["acquire "+l.name], time.Now())
		l.mu.Unlock()
	}
	return resp, err
}

func (l stampedLease) ReleaseLease(ctx context.Context, o *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error) {
	resp, err := l.Lease.ReleaseLease(ctx, o)
	if err == nil {
		l.mu.Lock()
		l.stamp["release "+l.name] = append(l.stamp["release "+l.name], time.Now())
		l.mu.Unlock()
	}
	return resp, err
}

// TestReleasedQueueIsTakenPromptly, in virtual time: a role that gives a
// queue up to rebalance releases it only after its worker's last handler
// (1 s here), so a joining role's round that falls in between finds the
// queue still leased. The joiner, short of its share, looks again within
// Renew/5 instead of waiting a whole Renew, so the queue waits at most
// about a second for its new owner rather than up to Renew (5 s).
func TestReleasedQueueIsTakenPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		svc := fake.NewQueueService(nil)
		mem := &memLeases{blobs: map[string]*memBlob{}}
		poison := svc.NewQueueClient("poison", nil)
		_, _ = poison.Create(ctx, nil)
		var set []ownership.OwnedQueue
		for i := range 2 {
			q := svc.NewQueueClient(fmt.Sprintf("q%02d", i), nil)
			if _, err := q.Create(ctx, nil); err != nil {
				t.Fatal(err)
			}
			for j := range 50 {
				_ = consistency.NewSender(q, nil).Send(ctx, "job.v1", fmt.Sprint(j), j, nil)
			}
			set = append(set, ownership.OwnedQueue{Name: fmt.Sprintf("q%02d", i), Queue: q, Poison: poison})
		}
		var mu sync.Mutex
		stamp := map[string][]time.Time{}
		start := func(name string) (*ownership.Role, chan error, context.CancelFunc) {
			r, err := ownership.NewRole(mem, "leases", set, &ownership.RoleOptions{
				Name: name, LeaseDuration: 15 * time.Second, Renew: 5 * time.Second, Logger: quiet,
				Worker: &consistency.WorkerOptions{Concurrency: 1, Visibility: 10 * time.Second, Logger: quiet},
				LeaseFor: func(b, id string) (ownership.Lease, error) {
					l, _ := mem.leaseFor(b, id)
					return stampedLease{l, b, &mu, stamp}, nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Handle("job.v1", func(ctx context.Context, m *consistency.Message) error {
				time.Sleep(time.Second)
				return nil
			})
			rctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- r.Run(rctx, nil) }()
			return r, errc, cancel
		}
		a, aerr, acancel := start("a")
		waitFor(t, time.Second, "a alone did not take both queues", func() bool { return len(a.Owned()) == 2 })
		// b joins half a second after a's first round: a notices it at its
		// next round (5 s), stops that queue's worker, which finishes its
		// handler (up to 1 s) before the release; b's own round at 5.5 s
		// falls inside that second.
		time.Sleep(500 * time.Millisecond)
		b, berr, bcancel := start("b")
		waitFor(t, time.Minute, "no 1/1 split", func() bool { return len(a.Owned()) == 1 && len(b.Owned()) == 1 })
		moved := b.Owned()[0]
		mu.Lock()
		released, acquired := stamp["release queues/"+moved], stamp["acquire queues/"+moved]
		mu.Unlock()
		if len(released) != 1 || len(acquired) != 2 {
			t.Fatalf("%s: %d releases, %d acquisitions; want 1 and 2", moved, len(released), len(acquired))
		}
		gap := acquired[1].Sub(released[0])
		t.Logf("%s released at %v, taken by b %v later", moved, released[0].Sub(acquired[0]), gap)
		if gap > time.Second+100*time.Millisecond {
			t.Errorf("%s waited %v for its new owner after its release; want at most Renew/5 (1 s)", moved, gap)
		}
		acancel()
		bcancel()
		for _, c := range []chan error{aerr, berr} {
			if err := <-c; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// hangingRenew blocks RenewLease until its context ends while hang is set:
// a service that stops answering.
type hangingRenew struct {
	ownership.Lease
	hang *atomic.Bool
}

func (l hangingRenew) RenewLease(ctx context.Context, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error) {
	if l.hang.Load() {
		<-ctx.Done()
		return lease.BlobRenewResponse{}, ctx.Err()
	}
	return l.Lease.RenewLease(ctx, o)
}

// TestRoleRenewalsThatDoNotAnswer, in virtual time (LeaseDuration 15 s,
// Renew 5 s): a renewal call that never answers (an overloaded emulator
// answered some after 97 s) must not hold up the role. When a queue's
// renewals hang, the role stops that queue's worker before the lease can
// expire, where another role may take it; when the member lease's renewals
// hang, the role still renews its queue leases and keeps its queue.
func TestRoleRenewalsThatDoNotAnswer(t *testing.T) {
	for _, which := range []string{"queues/q00", "members/a"} {
		t.Run(which, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, q, p := queues(t)
				mem := &memLeases{blobs: map[string]*memBlob{}}
				var hang atomic.Bool
				r, err := ownership.NewRole(mem, "leases", []ownership.OwnedQueue{{Name: "q00", Queue: q, Poison: p}}, &ownership.RoleOptions{
					Name: "a", LeaseDuration: 15 * time.Second, Renew: 5 * time.Second, Logger: quiet, Worker: &consistency.WorkerOptions{Logger: quiet},
					LeaseFor: func(b, id string) (ownership.Lease, error) {
						l, _ := mem.leaseFor(b, id)
						if b == which {
							return hangingRenew{l, &hang}, nil
						}
						return l, nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				errc := make(chan error, 1)
				go func() { errc <- r.Run(ctx, nil) }()
				waitFor(t, 10*time.Second, "q00 not taken", func() bool { return len(r.Owned()) == 1 })
				time.Sleep(100 * time.Millisecond) // just after the first round's acquisition
				hang.Store(true)
				renewed := time.Now().Add(-100 * time.Millisecond)
				queueState := func() lease.StateType {
					mem.mu.Lock()
					defer mem.mu.Unlock()
					return mem.blobs["queues/q00"].state(time.Now())
				}
				if which == "queues/q00" {
					for len(r.Owned()) == 1 && time.Since(renewed) < time.Minute {
						time.Sleep(100 * time.Millisecond)
					}
					if d := time.Since(renewed); d >= 15*time.Second {
						t.Errorf("the queue's worker ran %v after its last renewal, past its lease (15 s)", d.Round(100*time.Millisecond))
					} else {
						t.Logf("stopped %v after the last renewal", d.Round(100*time.Millisecond))
					}
				} else {
					time.Sleep(40 * time.Second)
					if st := queueState(); st != lease.StateTypeLeased || len(r.Owned()) != 1 {
						t.Errorf("after 40 s of member renewals without an answer the queue lease is %s and the role owns %v; want it leased and owned", st, r.Owned())
					}
				}
				cancel()
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
