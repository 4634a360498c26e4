// Package benchkit holds the benchmark scenarios, each the naive way (the
// SDK alone, as a user would write it) and the tablekit way, so that the
// benchmark program (tools/bench) and the go test benchmarks measure the
// same code.
package benchkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Row is the entity the scenarios write.
type Row struct {
	table.Meta
	Payload string
	N       int
}

// Rows returns n rows over parts partitions.
func Rows(n, parts int) []*Row {
	rows := make([]*Row, n)
	for i := range rows {
		rows[i] = &Row{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%02d", i%parts), RowKey: keyrules.Uint64(uint64(i))},
			Payload: "the quick brown fox jumps over the lazy dog", N: i}
	}
	return rows
}

// Account makes clients for one storage account, counting requests.
type Account struct {
	// Tables is a service client as aztables' docs build it: the naive
	// sides use it, and tablekit's fallback sides (a client without
	// tablekit's policy).
	Tables *aztables.ServiceClient
	// KitTables is built the way the README shows,
	// aztables.NewServiceClientFromConnectionString with table.ClientOptions, with the same counting
	// policies: tablekit's default path.
	KitTables *aztables.ServiceClient
	// floorTables drops every entity's body before the SDK decodes it
	// (GetFloor).
	floorTables *aztables.ServiceClient
	// rawOnKitTransport is Tables with the transport table.ClientOptions
	// gives and nothing else of tablekit's (GetRawOnKitTransport).
	rawOnKitTransport *aztables.ServiceClient
	Conn              string
	Ledger            *ledger.Ledger
	rtt               *roundTrip
	slow              atomic.Int64 // requests slower than SlowRequest since the last measure
	servicePID        int          // the local service's process (Azurite), found at the first measure; 0: none
}

// NewAccount connects to the account of a connection string.
func NewAccount(conn string) (*Account, error) {
	l := ledger.New()
	rtt := &roundTrip{}
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	a := &Account{Conn: conn, Ledger: l, rtt: rtt}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, rtt, slowPolicy{a})
	svc, err := aztables.NewServiceClientFromConnectionString(conn, opts)
	if err != nil {
		return nil, err
	}
	if a.KitTables, err = aztables.NewServiceClientFromConnectionString(conn, table.ClientOptions(opts)); err != nil {
		return nil, err
	}
	floor := *opts
	floor.PerCallPolicies = append([]policy.Policy{dropBody{}}, opts.PerCallPolicies...)
	if a.floorTables, err = aztables.NewServiceClientFromConnectionString(conn, &floor); err != nil {
		return nil, err
	}
	onKit := *opts
	onKit.Transport = table.ClientOptions(nil).Transport
	if a.rawOnKitTransport, err = aztables.NewServiceClientFromConnectionString(conn, &onKit); err != nil {
		return nil, err
	}
	a.Tables = svc
	return a, nil
}

// KitClient is a client of the table built as the README shows
// (KitTables): tablekit's default path.
func (a *Account) KitClient(name string) *aztables.Client { return a.KitTables.NewClient(name) }

// QueueOptions are client options for the account's queues: requests
// counted in the ledger, the round trip added, slow requests flagged.
func (a *Account) QueueOptions() *azqueue.ClientOptions {
	o := &azqueue.ClientOptions{}
	a.Ledger.Attach(&o.ClientOptions, ledger.Queue)
	o.PerRetryPolicies = append(o.PerRetryPolicies, a.rtt, slowPolicy{a})
	return o
}

// dropBody hands the SDK "{}" in place of a 200 answer's body, as
// tablekit's policy does for a point read, without decoding it.
type dropBody struct{}

func (dropBody) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil || resp == nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if _, err := runtime.Payload(resp); err != nil {
		return resp, err
	}
	r := *resp
	r.Body = io.NopCloser(strings.NewReader("{}"))
	r.ContentLength = 2
	return &r, nil
}

// slowPolicy counts requests slower than SlowRequest.
type slowPolicy struct{ a *Account }

func (p slowPolicy) Do(req *policy.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := req.Next()
	if time.Since(start) > SlowRequest {
		p.a.slow.Add(1)
	}
	return resp, err
}

// SetRoundTrip adds d to every later request of the account's table and
// queue clients, as a network round trip would: an emulator on loopback
// answers in well under a millisecond, a real account does not.
func (a *Account) SetRoundTrip(d time.Duration) { a.rtt.d.Store(int64(d)) }

// roundTrip is a policy that waits before sending.
type roundTrip struct{ d atomic.Int64 }

func (r *roundTrip) Do(req *policy.Request) (*http.Response, error) {
	if d := time.Duration(r.d.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-req.Raw().Context().Done():
			return nil, req.Raw().Context().Err()
		}
	}
	return req.Next()
}

// NewTable creates a uniquely named table; drop deletes it.
func (a *Account) NewTable(ctx context.Context, base string) (client *aztables.Client, drop func(), err error) {
	_, client, drop, err = a.newTable(ctx, base)
	return client, drop, err
}

// NewTableName creates a uniquely named table and returns its name (for
// clients of either service client); drop deletes it.
func (a *Account) NewTableName(ctx context.Context, base string) (name string, drop func(), err error) {
	name, _, drop, err = a.newTable(ctx, base)
	return name, drop, err
}

func (a *Account) newTable(ctx context.Context, base string) (name string, client *aztables.Client, drop func(), err error) {
	name = fmt.Sprintf("%s%d", base, time.Now().UnixNano())
	if _, err := a.Tables.CreateTable(ctx, name, nil); err != nil {
		return "", nil, nil, err
	}
	return name, a.Tables.NewClient(name), func() { _, _ = a.Tables.DeleteTable(context.Background(), name, nil) }, nil
}

// LoadPerEntity is the naive bulk load: one AddEntity per entity.
func LoadPerEntity(ctx context.Context, client *aztables.Client, rows []*Row) error {
	for _, r := range rows {
		body, err := tableio.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := client.AddEntity(ctx, body, nil); err != nil {
			return err
		}
	}
	return nil
}

// LoadHandLoop is the careful hand-written bulk load: transactions of 100
// per partition, one after another.
func LoadHandLoop(ctx context.Context, client *aztables.Client, rows []*Row) error {
	byPK := map[string][]aztables.TransactionAction{}
	var order []string
	for _, r := range rows {
		body, err := tableio.Marshal(r)
		if err != nil {
			return err
		}
		if _, ok := byPK[r.PartitionKey]; !ok {
			order = append(order, r.PartitionKey)
		}
		byPK[r.PartitionKey] = append(byPK[r.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
	}
	for _, pk := range order {
		acts := byPK[pk]
		for i := 0; i < len(acts); i += 100 {
			if _, err := client.SubmitTransaction(ctx, acts[i:min(i+100, len(acts))], nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// LoadWriter is the tablekit bulk load.
func LoadWriter[R any](ctx context.Context, client *aztables.Client, rows []*R, parallelism int) error {
	ops := make([]batch.Op, len(rows))
	for i, r := range rows {
		ops[i] = batch.Add(r)
	}
	sum, err := batch.NewWriter(client, &batch.WriterOptions{Parallelism: parallelism}).Write(ctx, slices.Values(ops), nil)
	if err == nil && sum.Operations != len(rows) {
		err = fmt.Errorf("wrote %d of %d", sum.Operations, len(rows))
	}
	return err
}

// Archive moves n entities Current → Archive through a queue with the
// given workers and concurrency, returning the time the workers took.
func (a *Account) Archive(ctx context.Context, n, workers, concurrency int) (time.Duration, error) {
	cur, dropCur, err := a.NewTable(ctx, "benchcur")
	if err != nil {
		return 0, err
	}
	defer dropCur()
	arc, dropArc, err := a.NewTable(ctx, "bencharc")
	if err != nil {
		return 0, err
	}
	defer dropArc()
	if err := LoadWriter(ctx, cur, Rows(n, 1), 8); err != nil {
		return 0, err
	}
	name := fmt.Sprintf("benchq%d", time.Now().UnixNano())
	q, err := azqueue.NewQueueClientFromConnectionString(a.Conn, name, a.QueueOptions())
	if err != nil {
		return 0, err
	}
	p, _ := azqueue.NewQueueClientFromConnectionString(a.Conn, name+"p", nil)
	if _, err := q.Create(ctx, nil); err != nil {
		return 0, err
	}
	_, _ = p.Create(ctx, nil)
	defer q.Delete(context.Background(), nil)
	defer p.Delete(context.Background(), nil)
	current, _ := table.New[Row](cur, nil)
	archive, _ := table.New[Row](arc, nil)
	mover := consistency.NewMover[Row](current, archive, consistency.NewSender(q, nil), nil)
	for i := 0; i < n; i++ {
		if err := mover.Request(ctx, "p00", keyrules.Uint64(uint64(i)), nil); err != nil {
			return 0, err
		}
	}
	var ws []*consistency.Worker
	for i := 0; i < workers; i++ {
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: concurrency})
		if err := w.Handle(mover.MessageType(), mover.Process); err != nil {
			return 0, err
		}
		ws = append(ws, w)
	}
	a.Ledger.Reset()
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = w.Drain(ctx, nil) }()
	}
	wg.Wait()
	took := time.Since(start)
	left, err := seqs.Collect(current.Query(ctx, nil))
	if err != nil || len(left) != 0 {
		return 0, fmt.Errorf("%d entities not moved (%v)", len(left), err)
	}
	return took, nil
}

// ShardedTable fills a table with n rows over shards shard partitions.
func ShardedTable(ctx context.Context, client *aztables.Client, n, shards int) (*patterns.Sharded[Row], error) {
	events, err := table.New[Row](client, nil)
	if err != nil {
		return nil, err
	}
	s, err := patterns.NewSharded[Row](events, "events", shards)
	if err != nil {
		return nil, err
	}
	rows := Rows(n, 1)
	for i, r := range rows {
		r.PartitionKey = s.Partitions()[i%shards]
	}
	return s, LoadWriter(ctx, client, rows, 8)
}

// ReadMerged reads all shards with the parallel k-way merge.
func ReadMerged(ctx context.Context, s *patterns.Sharded[Row]) (int, error) {
	n := 0
	for _, err := range s.Read(ctx, nil) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ReadSequential reads the shards one after another and sorts: the naive way.
func ReadSequential(ctx context.Context, client *aztables.Client, s *patterns.Sharded[Row]) (int, error) {
	tbl, _ := table.New[Row](client, nil)
	var all []*Row
	for _, pk := range s.Partitions() {
		part, err := seqs.Collect(tbl.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}))
		if err != nil {
			return 0, err
		}
		all = append(all, part...)
	}
	slices.SortFunc(all, func(x, y *Row) int { return keyrules.Compare(x.RowKey, y.RowKey) })
	return len(all), nil
}
