package accounts

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"slices"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

// ErrBadConfig: the accounts given to New cannot make a Router, or a
// connection string cannot be honoured as written. Reported by New,
// ParseConnectionString and a Connection's constructors, before any
// request. A connection string's error names the setting, never its value,
// so a key or signature is not printed.
var ErrBadConfig = errors.New("accounts: bad configuration")

// Config describes one account to New.
type Config struct {
	// Name identifies the account in the hash. It must be unique, and
	// stable: renaming an account moves its keys as if it were removed
	// and another added. The storage account's name is a good choice.
	Name string
	// Connect returns the account's table service client built with
	// opts: the caller's ClientOptions with the account's limiter added
	// as a per-call policy. A parsed connection string's TableService is
	// one: Connect: conn.TableService.
	Connect func(opts *aztables.ClientOptions) (*aztables.ServiceClient, error)
	// ClientOptions are the base options of the account's clients (retry,
	// transport, telemetry). Default: nil, the SDK's defaults.
	ClientOptions *aztables.ClientOptions
	// Limits configure the account's limiter. Default: nil, tune's
	// defaults, the service's targets (tune.PartitionTarget per partition,
	// tune.AccountTarget per account).
	Limits *tune.LimiterOptions
}

// Options configure a Router. nil means the defaults.
type Options struct {
	// Key maps a PartitionKey to the key that is hashed, so that
	// partitions that must share an account do (a tenant's prefix, say).
	// It must be a pure function. Default: the PartitionKey itself.
	Key func(partitionKey string) string
}

// Account is one storage account of a Router.
type Account struct {
	name    string
	service *aztables.ServiceClient
	limiter *tune.Limiter
	seed    uint64
}

// Name is the account's name in the hash.
func (a *Account) Name() string { return a.name }

// Service is the account's table service client; its requests pass the
// account's limiter.
func (a *Account) Service() *aztables.ServiceClient { return a.service }

// Limiter is the account's limiter, in the pipeline of all its clients.
func (a *Account) Limiter() *tune.Limiter { return a.limiter }

// Table is the client of one table in this account.
func (a *Account) Table(name string) *aztables.Client { return a.service.NewClient(name) }

// Router maps keys to accounts. It is immutable and safe for concurrent use.
type Router struct {
	accounts []*Account
	key      func(string) string
}

// New connects to every account (Connect sends no request with the SDK's
// constructors) and returns the Router. Names must be unique and non-empty,
// and every Connect set.
func New(configs []Config, opts *Options) (*Router, error) {
	if len(configs) == 0 {
		return nil, fmt.Errorf("%w: no accounts", ErrBadConfig)
	}
	r := &Router{key: func(pk string) string { return pk }}
	if opts != nil && opts.Key != nil {
		r.key = opts.Key
	}
	seen := map[string]bool{}
	for i, c := range configs {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("%w: account %d has no name", ErrBadConfig, i)
		case seen[c.Name]:
			return nil, fmt.Errorf("%w: two accounts named %q", ErrBadConfig, c.Name)
		case c.Connect == nil:
			return nil, fmt.Errorf("%w: account %q has no Connect", ErrBadConfig, c.Name)
		}
		seen[c.Name] = true
		lim := tune.NewLimiter(c.Limits)
		var o aztables.ClientOptions
		if c.ClientOptions != nil {
			o = *c.ClientOptions
		}
		// A fresh slice: the caller's options may be shared by accounts.
		o.PerCallPolicies = append(slices.Clone(o.PerCallPolicies), policy.Policy(lim))
		svc, err := c.Connect(&o)
		if err != nil {
			return nil, fmt.Errorf("accounts: connecting to %q: %w", c.Name, err)
		}
		if svc == nil {
			return nil, fmt.Errorf("%w: Connect of %q returned no client", ErrBadConfig, c.Name)
		}
		r.accounts = append(r.accounts, &Account{name: c.Name, service: svc, limiter: lim, seed: hash64(c.Name)})
	}
	return r, nil
}

// Accounts lists the accounts in the order given to New.
func (r *Router) Accounts() []*Account { return slices.Clone(r.accounts) }

// hash64 is FNV-1a, 64 bits. It is part of the on-disk contract: changing
// it would move almost every key, so it never changes.
func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// mix is SplitMix64's finaliser: FNV's low bits are weak, and rendezvous
// hashing compares whole scores.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// index is the account with the highest score for key (rendezvous, or
// highest-random-weight, hashing): adding an account moves exactly the keys
// it now wins, removing one moves exactly its own keys, and the order of
// the accounts does not matter. Ties, as unlikely as a 64-bit collision,
// go to the lower name.
func (r *Router) index(partitionKey string) int {
	k := hash64(r.key(partitionKey))
	best, bestScore := 0, uint64(0)
	for i, a := range r.accounts {
		s := mix(a.seed ^ mix(k))
		if i == 0 || s > bestScore || (s == bestScore && a.name < r.accounts[best].name) {
			best, bestScore = i, s
		}
	}
	return best
}

// For is the account that holds partitionKey.
func (r *Router) For(partitionKey string) *Account { return r.accounts[r.index(partitionKey)] }

// Table is the client of table name in the account that holds partitionKey:
// pass it to table.New, batch.Submit or a pattern for that partition.
func (r *Router) Table(partitionKey, name string) *aztables.Client {
	return r.For(partitionKey).Table(name)
}

// CreateTable creates table name in every account; one that exists already
// is fine. One request per account.
func (r *Router) CreateTable(ctx context.Context, name string, _ *WriteOptions) error {
	var errs []error
	for _, a := range r.accounts {
		if _, err := a.service.CreateTable(ctx, name, nil); err != nil && !table.Is(err, table.ErrAlreadyExists) {
			errs = append(errs, fmt.Errorf("accounts: creating %q in %q: %w", name, a.name, err))
		}
	}
	// A transport error names the URL, a SAS signature included.
	return redact.Error(errors.Join(errs...))
}

// WriteOptions configure the writes of this package without knobs of
// their own (Router.CreateTable). There are none yet; pass nil.
type WriteOptions struct{}

// Write bulk-writes ops to table name, each operation in the account of its
// PartitionKey: one batch.Writer per account, all running at once, each
// with opts (so Parallelism applies per account). Within an account the
// Writer's order and rules hold; the Summary is their sum and the error
// joins theirs. Progress, when set, gets the running sum, one call at a
// time.
func (r *Router) Write(ctx context.Context, name string, ops iter.Seq[batch.Op], opts *batch.WriterOptions) (batch.Summary, error) {
	n := len(r.accounts)
	feeds := make([]chan batch.Op, n)
	sums := make([]batch.Summary, n)
	errs := make([]error, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, a := range r.accounts {
		feeds[i] = make(chan batch.Op, batch.MaxOperations)
		var o batch.WriterOptions
		if opts != nil {
			o = *opts
		}
		if opts != nil && opts.Progress != nil {
			o.Progress = func(s batch.Summary) {
				mu.Lock()
				defer mu.Unlock()
				sums[i] = s
				opts.Progress(sum(sums))
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := batch.NewWriter(a.Table(name), &o).Write(ctx, func(yield func(batch.Op) bool) {
				for op := range feeds[i] {
					if !yield(op) {
						return
					}
				}
			}, nil)
			// A writer that stopped early (a bad operation, a cancelled
			// ctx) skips the rest of its feed, so the feed never blocks
			// the other accounts.
			for range feeds[i] {
				s.Skipped++
			}
			mu.Lock()
			sums[i], errs[i] = s, err
			mu.Unlock()
		}()
	}
	for op := range ops {
		if ctx.Err() != nil {
			break
		}
		feeds[r.index(op.PartitionKey())] <- op
	}
	for _, f := range feeds {
		close(f)
	}
	wg.Wait()
	var joined []error
	for i, err := range errs {
		if err != nil {
			joined = append(joined, fmt.Errorf("accounts: writing to %q: %w", r.accounts[i].name, err))
		}
	}
	if ctx.Err() != nil {
		joined = append(joined, ctx.Err())
	}
	return sum(sums), errors.Join(joined...)
}

func sum(ss []batch.Summary) batch.Summary {
	var t batch.Summary
	for _, s := range ss {
		t.Operations += s.Operations
		t.Transactions += s.Transactions
		t.Requests += s.Requests
		t.Retries += s.Retries
		t.Failed += s.Failed
		t.Skipped += s.Skipped
		t.Resolved += s.Resolved
		t.Reads += s.Reads
	}
	return t
}
