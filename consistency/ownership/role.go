// Package ownership shares a set of queues among worker processes through
// blob leases: the guide's worker roles, each owning a partition set. A
// consistency.NewShardedSender routes every message of a key to one queue of
// the set (a stable hash of the key); a Role runs in each process, takes
// its fair share of the queues, each held by a renewable lease, and runs a
// consistency.Worker on each queue it holds. Roles give queues up when a
// role joins and take over a dead role's queues when its leases expire.
// The storage services are the coordinator, so there is nothing else to
// deploy.
//
// It is a package of its own because leases are blobs: consistency itself
// does not import azblob (which pulls in Apache Arrow), so a program that
// only sends and handles messages builds without either.
package ownership

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/msgtype"
	"github.com/tablekit/tablekit/internal/redact"
)

// Lease limits of the Blob service ("Lease Blob"): a lease lasts 15 to 60
// seconds, or is infinite; an infinite lease would never pass to another
// role when its owner dies, so roles use timed ones.
const (
	minLeaseDuration = 15 * time.Second
	maxLeaseDuration = 60 * time.Second
)

// Lease is the part of *lease.BlobClient a Role uses to hold a queue: pass
// the SDK's client (RoleOptions.LeaseFor) or let the Role make it.
type Lease interface {
	AcquireLease(ctx context.Context, duration int32, o *lease.BlobAcquireOptions) (lease.BlobAcquireResponse, error)
	RenewLease(ctx context.Context, o *lease.BlobRenewOptions) (lease.BlobRenewResponse, error)
	ReleaseLease(ctx context.Context, o *lease.BlobReleaseOptions) (lease.BlobReleaseResponse, error)
}

// LeaseStore is the part of *azblob.Client a Role uses: it creates the
// lease blobs, lists them with their lease state, deletes the member blobs
// of roles long gone, and reaches the blob clients that leases are taken
// on.
type LeaseStore interface {
	UploadBuffer(ctx context.Context, containerName string, blobName string, buffer []byte, o *azblob.UploadBufferOptions) (azblob.UploadBufferResponse, error)
	NewListBlobsFlatPager(containerName string, o *azblob.ListBlobsFlatOptions) *runtime.Pager[azblob.ListBlobsFlatResponse]
	DeleteBlob(ctx context.Context, containerName string, blobName string, o *azblob.DeleteBlobOptions) (azblob.DeleteBlobResponse, error)
	ServiceClient() *service.Client
}

// The official clients satisfy the ports with no adapter.
var (
	_ Lease      = (*lease.BlobClient)(nil)
	_ LeaseStore = (*azblob.Client)(nil)
)

// Blob name prefixes in a Role's container: one blob per member, held by a
// lease while the member lives, and one per queue, held by its owner.
const (
	memberPrefix = "members/"
	queuePrefix  = "queues/"
)

// OwnedQueue is one queue of a Role's set, with the poison queue its
// worker moves failed messages to.
type OwnedQueue struct {
	// Name identifies the queue's lease blob; the queue's own name is the
	// natural choice. Names are unique within a set.
	Name          string
	Queue, Poison consistency.Queue
}

// RoleOptions configure a Role. nil means the defaults.
type RoleOptions struct {
	// Name identifies this role instance: its member blob and its logs.
	// Unique among the roles sharing a container. Default: random.
	Name string
	// LeaseDuration is how long a lease lasts without renewal, and so how
	// long a dead owner's queues wait before another role takes them.
	// Whole seconds from 15 s to 60 s, the Blob service's bounds of a
	// timed lease (NewRole refuses others with consistency.ErrBadOption).
	// Default: 30 s.
	LeaseDuration time.Duration
	// Renew is how often the role renews its leases and rebalances (a
	// role short of its fair share looks for free queues every Renew/5).
	// Below LeaseDuration/2. Default: LeaseDuration/3.
	Renew time.Duration
	// Worker configures the worker the role runs on each queue it owns.
	// Default: the Worker's defaults.
	Worker *consistency.WorkerOptions
	// LeaseFor returns the lease client for a blob of the container, with
	// leaseID as the lease's ID. Default: lease.NewBlobClient on the
	// store's blob client.
	LeaseFor func(blobName, leaseID string) (Lease, error)
	// Logger records ownership changes at Info and lease failures at Warn.
	// Default: slog.Default().
	Logger *slog.Logger
}

// Role is one of the guide's worker roles owning a set of partitions: a
// process that runs a consistency.Worker on each queue it owns, where the queues of a
// set (one per partition set, messages routed by consistency.NewShardedSender) are shared
// among all the roles running on the same container. Ownership of each
// queue is a renewable blob lease; a role also holds a lease on its own
// member blob, so every role can count the live ones. Each role aims at
// its fair share (queues / live roles, rounded down, plus one for the
// first queues mod live roles in name order, so the shares add up to the
// queues): it releases queues above it (a new role joined) and takes free
// or expired ones below it (a role left or died: its leases ran out). A
// dead role's queues are taken over within LeaseDuration + Renew.
//
// The lease decides who dequeues, not what is correct: after a long pause
// an old owner may still finish a message that a new owner also runs, and
// handlers converge either way, as with several workers on one queue.
type Role struct {
	store     LeaseStore
	container string
	queues    []OwnedQueue
	opts      RoleOptions
	leaseID   string
	log       *slog.Logger

	hmu      sync.Mutex
	handlers map[string]func(*consistency.Worker) error

	mu       sync.Mutex
	owned    map[string]*ownedRun // by queue name
	failed   []error
	stopping sync.WaitGroup // stops under way (a worker's ShutdownGrace)
}

type ownedRun struct {
	lease   Lease
	renewed time.Time // last acquire or renewal; read and written by Run's goroutine only
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewRole returns a role for queues whose leases live in container.
func NewRole(store LeaseStore, container string, queues []OwnedQueue, opts *RoleOptions) (*Role, error) {
	r := &Role{store: store, container: container, queues: slices.Clone(queues), handlers: map[string]func(*consistency.Worker) error{}, owned: map[string]*ownedRun{}}
	if opts != nil {
		r.opts = *opts
	}
	o := &r.opts
	if err := keyrules.ValidateContainerName(container); err != nil {
		return nil, err
	}
	if len(queues) == 0 {
		return nil, fmt.Errorf("%w: no queues", consistency.ErrBadOption)
	}
	seen := map[string]bool{}
	for _, q := range queues {
		if q.Queue == nil || q.Poison == nil {
			return nil, fmt.Errorf("%w: queue %q needs a Queue and a Poison queue", consistency.ErrBadOption, q.Name)
		}
		if err := keyrules.ValidateBlobName(queuePrefix + q.Name); err != nil || q.Name == "" || strings.Contains(q.Name, "/") {
			return nil, fmt.Errorf("%w: queue name %q is not usable in a blob name", consistency.ErrBadOption, q.Name)
		}
		if seen[q.Name] {
			return nil, fmt.Errorf("%w: queue name %q twice", consistency.ErrBadOption, q.Name)
		}
		seen[q.Name] = true
	}
	if o.Name == "" {
		o.Name = "role-" + newUUID()[:8]
	}
	if err := keyrules.ValidateBlobName(memberPrefix + o.Name); err != nil || strings.Contains(o.Name, "/") {
		return nil, fmt.Errorf("%w: role name %q is not usable in a blob name", consistency.ErrBadOption, o.Name)
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 30 * time.Second
	}
	if o.LeaseDuration < minLeaseDuration || o.LeaseDuration > maxLeaseDuration || o.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("%w: LeaseDuration %v is not whole seconds from %v to %v", consistency.ErrBadOption, o.LeaseDuration, minLeaseDuration, maxLeaseDuration)
	}
	if o.Renew == 0 {
		o.Renew = o.LeaseDuration / 3
	}
	if o.Renew <= 0 || o.Renew >= o.LeaseDuration/2 {
		return nil, fmt.Errorf("%w: Renew %v must be above 0 and below half of LeaseDuration %v", consistency.ErrBadOption, o.Renew, o.LeaseDuration)
	}
	if o.LeaseFor == nil {
		svc := store.ServiceClient()
		o.LeaseFor = func(name, id string) (Lease, error) {
			return lease.NewBlobClient(svc.NewContainerClient(container).NewBlobClient(name), &lease.BlobClientOptions{LeaseID: &id})
		}
	}
	r.log = o.Logger
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("role", o.Name)
	r.leaseID = newUUID()
	return r, nil
}

// Handle registers h for messages of msgType on every queue the role
// comes to own; as consistency.Worker.Handle, a second handler for a type is refused
// with consistency.ErrDuplicateHandler. Register every handler before Run: a queue's
// worker gets the handlers registered when the role takes the queue.
func (r *Role) Handle(msgType string, h consistency.Handler) error {
	if h == nil {
		return r.register(msgType, nil)
	}
	return r.register(msgType, func(w *consistency.Worker) error { return w.Handle(msgType, h) })
}

// HandleBatch registers the batched handler h for messages of msgType on
// every queue the role comes to own, as consistency.Worker.HandleBatch
// does; the rules of Handle apply.
func (r *Role) HandleBatch(msgType string, h consistency.BatchHandler) error {
	if h == nil {
		return r.register(msgType, nil)
	}
	return r.register(msgType, func(w *consistency.Worker) error { return w.HandleBatch(msgType, h) })
}

// register checks msgType and keeps add, which registers the type's
// handler on a worker; a nil add is a nil handler.
func (r *Role) register(msgType string, add func(*consistency.Worker) error) error {
	if !msgtype.Valid(msgType) {
		return fmt.Errorf("%w: %q", consistency.ErrBadType, msgType)
	}
	if add == nil {
		return fmt.Errorf("%w for %s", consistency.ErrNilHandler, msgType)
	}
	r.hmu.Lock()
	defer r.hmu.Unlock()
	if _, ok := r.handlers[msgType]; ok {
		return fmt.Errorf("%w: %q", consistency.ErrDuplicateHandler, msgType)
	}
	r.handlers[msgType] = add
	return nil
}

// Owned lists the names of the queues the role holds now, sorted.
func (r *Role) Owned() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.owned))
	for name := range r.owned {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Run joins the roles of the container and works on the queues it owns
// until ctx ends (call it once per Role); then it stops its workers (each
// within its ShutdownGrace) and releases its leases, so the others take
// over at once rather than after LeaseDuration. It returns the workers'
// *consistency.FailureReport values joined, or nil when no message failed.
// Its options are its workers' Run's (the role's own settings are its
// RoleOptions).
func (r *Role) Run(ctx context.Context, o *consistency.WriteOptions) error {
	member, err := r.opts.LeaseFor(memberPrefix+r.opts.Name, r.leaseID)
	if err != nil {
		return err
	}
	isMember, short := false, false
	var renewed time.Time // the last round that renewed the leases
	// A role short of its share looks for free queues again after
	// Renew/shortLookDivisor rather than a whole Renew: a queue given up to
	// rebalance is released only after its worker's last handler, so a
	// round that came just before the release would otherwise leave the
	// queue without an owner for up to Renew. Those extra rounds list the
	// container and renew nothing.
	look := r.opts.Renew / shortLookDivisor
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.stopAll(member, isMember)
			r.mu.Lock()
			defer r.mu.Unlock()
			return errors.Join(r.failed...)
		case <-tick.C:
		}
		renew := time.Since(renewed) >= r.opts.Renew-look/2 // timers fire late, never early
		if renew {
			renewed = time.Now()
		}
		isMember, short = r.round(ctx, member, isMember, renew)
		next := r.opts.Renew - time.Since(renewed)
		if short {
			next = min(next, look)
		}
		tick.Reset(max(next, 0))
	}
}

// shortLookDivisor: a role short of its fair share lists the container
// every Renew/shortLookDivisor until it has its share.
const shortLookDivisor = 5

// round is one rebalancing pass: renew what the role holds (if renew),
// list the container, then release or take queues toward the fair share.
// It returns whether the role is a member and whether it holds fewer
// queues than its share.
func (r *Role) round(ctx context.Context, member Lease, isMember, renew bool) (bool, bool) {
	secs := int32(r.opts.LeaseDuration / time.Second)
	if !renew {
		rctx, cancel := context.WithTimeout(ctx, r.opts.Renew/2)
		defer cancel()
		return r.rebalance(rctx, member, isMember, secs)
	}
	// Each lease call gets Renew/2: a call the service does not answer in
	// that time counts as failed (the rules below decide whether there is
	// time for another try), so one call that hangs can neither keep a
	// worker running past its lease nor hold up the other renewals.
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, r.opts.Renew/2) }
	if isMember {
		mctx, cancel := bounded()
		_, err := member.RenewLease(mctx, nil)
		cancel()
		if err != nil {
			r.log.WarnContext(ctx, "tablekit: member lease lost", "err", redact.Error(err))
			isMember = false
		}
	}
	for _, name := range r.Owned() {
		r.mu.Lock()
		run := r.owned[name]
		r.mu.Unlock()
		qctx, cancel := bounded()
		_, err := run.lease.RenewLease(qctx, nil)
		cancel()
		switch {
		case err == nil:
			run.renewed = time.Now()
		case leaseGone(err) || time.Since(run.renewed)+r.opts.Renew >= r.opts.LeaseDuration:
			// Another role holds it, or it may expire before the next try:
			// stop at once, without a release.
			r.log.WarnContext(ctx, "tablekit: queue lease lost; stopping its worker", "queue", name, "err", redact.Error(err))
			r.stopAsync(name, nil)
		default:
			// A transient failure with time left: try again next round.
			r.log.WarnContext(ctx, "tablekit: queue lease renewal failed; retrying", "queue", name, "err", redact.Error(err))
		}
	}
	rctx, cancel := bounded()
	defer cancel()
	return r.rebalance(rctx, member, isMember, secs)
}

// rebalance lists the container, joins if the role is not a member yet,
// and releases or takes queues toward the fair share; see round.
func (r *Role) rebalance(ctx context.Context, member Lease, isMember bool, secs int32) (bool, bool) {
	state, stale, err := r.list(ctx)
	if err != nil {
		r.log.WarnContext(ctx, "tablekit: listing the lease blobs failed", "err", redact.Error(err))
		return isMember, false
	}
	if !isMember {
		if err := r.ensure(ctx, state, memberPrefix+r.opts.Name); err == nil {
			if _, err := member.AcquireLease(ctx, secs, nil); err == nil {
				isMember = true
				state[memberPrefix+r.opts.Name] = lease.StateTypeLeased
			} else {
				r.log.WarnContext(ctx, "tablekit: cannot join: member lease", "err", redact.Error(err))
			}
		}
	}
	var members []string
	for name, st := range state {
		if strings.HasPrefix(name, memberPrefix) && st == lease.StateTypeLeased {
			members = append(members, strings.TrimPrefix(name, memberPrefix))
		}
	}
	live := len(members)
	if !isMember || live == 0 {
		return isMember, false // not counted yet: take nothing, or the others' shares would be wrong
	}
	for _, name := range stale {
		// A leased blob cannot be deleted without its lease ID, so a role
		// that came back meanwhile keeps its blob; one that comes back
		// later re-creates it.
		if _, err := r.store.DeleteBlob(ctx, r.container, name, nil); err == nil {
			r.log.InfoContext(ctx, "tablekit: deleted the member blob of a role gone", "blob", name)
		}
	}
	share := fairShare(len(r.queues), members, r.opts.Name)
	owned := r.Owned()
	for len(owned) > share {
		name := owned[len(owned)-1]
		owned = owned[:len(owned)-1]
		r.mu.Lock()
		run := r.owned[name]
		r.mu.Unlock()
		r.log.InfoContext(ctx, "tablekit: releasing a queue to rebalance", "queue", name, "share", share, "live", live)
		r.stopAsync(name, run.lease)
	}
	// Take free queues, starting at an offset of the role's own, so roles
	// that start together do not all try the same queue first.
	start := keyrules.ShardBucket(r.opts.Name, len(r.queues))
	for i := range r.queues {
		if len(owned) >= share {
			break
		}
		q := r.queues[(start+i)%len(r.queues)]
		if slices.Contains(owned, q.Name) {
			continue
		}
		blobName := queuePrefix + q.Name
		if st, ok := state[blobName]; ok && st == lease.StateTypeLeased {
			continue
		}
		if err := r.ensure(ctx, state, blobName); err != nil {
			continue
		}
		l, err := r.opts.LeaseFor(blobName, r.leaseID)
		if err != nil {
			r.log.WarnContext(ctx, "tablekit: lease client", "queue", q.Name, "err", redact.Error(err))
			continue
		}
		if _, err := l.AcquireLease(ctx, secs, nil); err != nil {
			continue // taken by another role in the meantime
		}
		r.start(ctx, q, l)
		owned = append(owned, q.Name)
		r.log.InfoContext(ctx, "tablekit: took a queue", "queue", q.Name, "share", share, "live", live)
	}
	return isMember, len(owned) < share
}

// fairShare is how many of n queues the member named self may hold: n
// divided by the live members, rounded down, plus one for the first n mod
// live members in name order. The shares add up to n, so a role below its
// share always finds a queue free once the others are at or below theirs;
// rounding up for everyone instead would let some roles keep the rounded-up
// share while others starve (6 roles on 8 queues: 2,2,2,2,0,0).
func fairShare(n int, members []string, self string) int {
	slices.Sort(members)
	rank, _ := slices.BinarySearch(members, self)
	share := n / len(members)
	if rank < n%len(members) {
		share++
	}
	return share
}

// list returns the lease state of every blob of the container, and the
// member blobs of roles gone: their lease expired or broken, or released
// (a clean shutdown) more than two lease durations ago.
func (r *Role) list(ctx context.Context) (map[string]lease.StateType, []string, error) {
	out := map[string]lease.StateType{}
	var stale []string
	pager := r.store.NewListBlobsFlatPager(r.container, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil {
				continue
			}
			st := lease.StateTypeAvailable
			if b.Properties != nil && b.Properties.LeaseState != nil {
				st = *b.Properties.LeaseState
			}
			out[*b.Name] = st
			if !strings.HasPrefix(*b.Name, memberPrefix) || *b.Name == memberPrefix+r.opts.Name {
				continue
			}
			old := b.Properties != nil && b.Properties.LastModified != nil && time.Since(*b.Properties.LastModified) > 2*r.opts.LeaseDuration
			if st == lease.StateTypeExpired || st == lease.StateTypeBroken || (st == lease.StateTypeAvailable && old) {
				stale = append(stale, *b.Name)
			}
		}
	}
	return out, stale, nil
}

// ensure creates an empty lease blob unless the listing showed it; one
// created meanwhile by another role is fine.
func (r *Role) ensure(ctx context.Context, state map[string]lease.StateType, name string) error {
	if _, ok := state[name]; ok {
		return nil
	}
	star := azcore.ETagAny
	_, err := r.store.UploadBuffer(ctx, r.container, name, nil, &azblob.UploadBufferOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &star}},
	})
	var re *azcore.ResponseError
	if err != nil && errors.As(err, &re) && (re.StatusCode == 409 || re.StatusCode == 412) {
		err = nil // exists already (and may be leased)
	}
	if err != nil {
		r.log.WarnContext(ctx, "tablekit: cannot create a lease blob", "blob", name, "err", redact.Error(err))
		return err
	}
	state[name] = lease.StateTypeAvailable
	return nil
}

// start runs a worker on q while the role holds l.
func (r *Role) start(ctx context.Context, q OwnedQueue, l Lease) {
	w := consistency.NewWorker(q.Queue, q.Poison, r.opts.Worker)
	r.hmu.Lock()
	for _, add := range r.handlers {
		_ = add(w) // checked by Role.Handle and HandleBatch already
	}
	r.hmu.Unlock()
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &ownedRun{lease: l, renewed: time.Now(), cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	r.owned[q.Name] = run
	r.mu.Unlock()
	go func() {
		defer close(run.done)
		if err := w.Run(wctx, nil); err != nil {
			r.mu.Lock()
			r.failed = append(r.failed, fmt.Errorf("queue %s: %w", q.Name, err))
			r.mu.Unlock()
		}
	}()
}

// finish ends the worker of a queue and waits for it (its ShutdownGrace),
// then releases the lease if release is not nil, so the next owner starts
// after this one's last handler.
func (r *Role) finish(name string, run *ownedRun, release Lease) {
	run.cancel()
	<-run.done
	if release != nil {
		// A fresh context: the role's own may have ended (shutdown).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := release.ReleaseLease(ctx, nil); err != nil {
			r.log.Warn("tablekit: releasing a queue lease failed; it expires by itself", "queue", name, "err", redact.Error(err))
		}
	}
}

// stopAsync stops a queue's worker without holding up the round: a worker
// may take its ShutdownGrace to stop, while the role's other leases must
// be renewed on time. The queue leaves Owned at once.
func (r *Role) stopAsync(name string, release Lease) {
	r.mu.Lock()
	run := r.owned[name]
	delete(r.owned, name)
	r.mu.Unlock()
	if run == nil {
		return
	}
	r.stopping.Add(1)
	go func() { defer r.stopping.Done(); r.finish(name, run, release) }()
}

// stopAll stops every worker, releases their leases, then the member lease.
func (r *Role) stopAll(member Lease, isMember bool) {
	for _, name := range r.Owned() {
		r.mu.Lock()
		run := r.owned[name]
		r.mu.Unlock()
		r.stopAsync(name, run.lease)
	}
	r.stopping.Wait()
	if isMember {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = member.ReleaseLease(ctx, nil)
	}
}

// leaseGone reports whether the service refused a lease operation for good
// (another lease ID holds it, or none does): a 4xx other than a timeout or
// throttling.
func leaseGone(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != 408 && re.StatusCode != 429
}

// newUUID returns a random (version 4) UUID, the form lease IDs take.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
