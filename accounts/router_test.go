package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

// fakeConfig is an account served by its own fake.
func fakeConfig(name string, svc *fake.TableService) accounts.Config {
	return accounts.Config{Name: name, Connect: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
		return svc.NewServiceClient(o), nil
	}}
}

// offline routers hash only; their clients are never used.
func offline(t *testing.T, names ...string) *accounts.Router {
	t.Helper()
	var cs []accounts.Config
	for _, n := range names {
		cs = append(cs, fakeConfig(n, fake.NewTableService(nil)))
	}
	r, err := accounts.New(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterIsStable(t *testing.T) {
	// The mapping is part of the data's layout: it must never change.
	// These are the accounts of the first keys, recorded once.
	r := offline(t, "acct0", "acct1", "acct2")
	want := map[string]string{}
	for _, k := range []string{"", "a", "b", "customer_000001", "customer_000002", "tenant|42", "Sales", "Marketing"} {
		want[k] = r.For(k).Name()
	}
	golden := map[string]string{
		"": "acct1", "a": "acct0", "b": "acct2", "customer_000001": "acct0", "customer_000002": "acct1",
		"tenant|42": "acct0", "Sales": "acct2", "Marketing": "acct0",
	}
	for k, g := range golden {
		if want[k] != g {
			t.Errorf("key %q maps to %s, was %s", k, want[k], g)
		}
	}
	// The order of the accounts does not matter.
	r2 := offline(t, "acct2", "acct0", "acct1")
	for k := range golden {
		if r2.For(k).Name() != r.For(k).Name() {
			t.Errorf("key %q depends on the accounts' order", k)
		}
	}
}

func TestRouterGrowsWithMinimalRemapping(t *testing.T) {
	const keys = 30000
	three := offline(t, "a", "b", "c")
	four := offline(t, "a", "b", "c", "d")
	two := offline(t, "a", "c") // b removed
	counts := map[string]int{}
	moved, movedOnRemove := 0, 0
	for i := range keys {
		k := fmt.Sprintf("pk%06d", i)
		from, to := three.For(k).Name(), four.For(k).Name()
		counts[from]++
		if from != to {
			moved++
			if to != "d" {
				t.Fatalf("key %s moved from %s to %s, not to the new account", k, from, to)
			}
		}
		if after := two.For(k).Name(); after != from {
			movedOnRemove++
			if from != "b" {
				t.Fatalf("key %s moved from %s when b was removed", k, from)
			}
		}
	}
	t.Logf("3 -> 4 accounts: %d of %d keys moved (%.2f%%); shares before: a %d, b %d, c %d; removing b moved %d",
		moved, keys, 100*float64(moved)/keys, counts["a"], counts["b"], counts["c"], movedOnRemove)
	// About a quarter moves to the new account; about a third each before.
	if f := float64(moved) / keys; math.Abs(f-0.25) > 0.02 {
		t.Errorf("%.3f of the keys moved to the 4th account, want about 0.25", f)
	}
	for n, c := range counts {
		if f := float64(c) / keys; math.Abs(f-1.0/3) > 0.02 {
			t.Errorf("account %s holds %.3f of the keys, want about 1/3", n, f)
		}
	}
	if movedOnRemove != counts["b"] {
		t.Errorf("removing b moved %d keys; b held %d", movedOnRemove, counts["b"])
	}
	// The migration view agrees.
	m, _ := accounts.NewMigration(three, four)
	n := 0
	for i := range keys {
		if _, to, ok := m.Moved(fmt.Sprintf("pk%06d", i)); ok {
			n++
			if to.Name() != "d" {
				t.Fatal("Moved names the wrong account")
			}
		}
	}
	if n != moved {
		t.Fatalf("Moved counts %d, want %d", n, moved)
	}
}

func TestRouterRefusesBadConfigs(t *testing.T) {
	svc := fake.NewTableService(nil)
	cases := map[string][]accounts.Config{
		"none":       nil,
		"no name":    {fakeConfig("", svc)},
		"same name":  {fakeConfig("a", svc), fakeConfig("a", svc)},
		"no Connect": {{Name: "a"}},
		"nil client": {{Name: "a", Connect: func(*aztables.ClientOptions) (*aztables.ServiceClient, error) { return nil, nil }}},
	}
	for name, cs := range cases {
		if _, err := accounts.New(cs, nil); !errors.Is(err, accounts.ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if svc.Total() != 0 {
		t.Fatalf("%d requests", svc.Total())
	}
}

type order struct {
	table.Meta
	Amount int64
}

type ledgerEvent struct {
	eventstream.Event
	Amount int64
}

func TestRouterOverTwoFakes(t *testing.T) {
	ctx := t.Context()
	svcs := map[string]*fake.TableService{"east": fake.NewTableService(nil), "west": fake.NewTableService(nil)}
	var mu sync.Mutex
	waits := map[string]int{}
	var cs []accounts.Config
	for _, name := range []string{"east", "west"} {
		c := fakeConfig(name, svcs[name])
		// A limiter that lets nothing through without a wait, with a clock
		// that does not sleep: every wait is a request this account's
		// limiter saw.
		c.Limits = &tune.LimiterOptions{PerAccount: 1, PerPartition: 1e9,
			Now: func() time.Time { return time.Unix(0, 0) },
			Sleep: func(context.Context, time.Duration) error {
				mu.Lock()
				waits[name]++
				mu.Unlock()
				return nil
			}}
		cs = append(cs, c)
	}
	r, err := accounts.New(cs, &accounts.Options{Key: func(pk string) string { return pk[:3] }}) // route by a 3-letter tenant prefix
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CreateTable(ctx, "orders", nil); err != nil {
		t.Fatal(err)
	}
	if svcs["east"].Count(fake.OpCreateTable) != 1 || svcs["west"].Count(fake.OpCreateTable) != 1 {
		t.Fatal("CreateTable must create the table in each account")
	}

	// Bulk write through per-account Writers.
	var ops []batch.Op
	want := map[string]int{}
	for tnt := range 20 {
		for i := range 30 {
			pk := fmt.Sprintf("t%02d-%d", tnt, i%3)
			want[r.For(pk).Name()]++
			ops = append(ops, batch.Add(&order{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprint(i)}, Amount: int64(i)}))
		}
	}
	var progress atomic.Int64
	sum, err := r.Write(ctx, "orders", slices.Values(ops), &batch.WriterOptions{Progress: func(s batch.Summary) { progress.Store(int64(s.Operations)) }})
	if err != nil || sum.Operations != len(ops) || progress.Load() != int64(len(ops)) {
		t.Fatalf("Write: %+v, %v (progress %d)", sum, err, progress.Load())
	}
	for name, svc := range svcs {
		if svc.Len("orders") != want[name] || want[name] == 0 {
			t.Fatalf("%s holds %d orders, want %d", name, svc.Len("orders"), want[name])
		}
		if waits[name] == 0 {
			t.Fatalf("%s's limiter saw no request", name)
		}
	}
	// A tenant's partitions share an account.
	for i := range 3 {
		if r.For(fmt.Sprintf("t07-%d", i)) != r.For("t07-0") {
			t.Fatal("a tenant's partitions are split")
		}
	}

	// table through the router: the key's account serves it.
	tb, _ := table.New[order](r.Table("t03-1", "orders"), nil)
	got, err := tb.Get(ctx, "t03-1", "4", nil)
	if err != nil || got.Amount != 4 {
		t.Fatalf("Get through the router: %+v, %v", got, err)
	}

	// A pattern per account, found by the key's account.
	streams := map[*accounts.Account]*eventstream.Store[ledgerEvent]{}
	for _, a := range r.Accounts() {
		if streams[a], err = eventstream.New[ledgerEvent](a.Table("orders"), nil); err != nil {
			t.Fatal(err)
		}
	}
	for tnt := range 6 {
		id := fmt.Sprintf("t%02d-stream", tnt)
		if _, err := streams[r.For(id)].Append(ctx, eventstream.NewHead(id), []*ledgerEvent{{Amount: 1}, {Amount: 2}}, nil); err != nil {
			t.Fatal(err)
		}
		h, err := streams[r.For(id)].Open(ctx, id, nil)
		if err != nil || h.Version() != 2 {
			t.Fatalf("stream %s: %v", id, err)
		}
		for name, svc := range svcs {
			n := 0
			rows, err := table.New[table.Entity](svc.NewClient("orders", nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range rows.Query(ctx, &table.QueryOptions{Filter: table.Partition(id)}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if home := r.For(id).Name() == name; (n > 0) != home {
				t.Fatalf("stream %s has %d rows in %s (its account: %s)", id, n, name, r.For(id).Name())
			}
		}
	}
}

// hook runs fn before the first transaction of the client whose options it
// is in, once armed.
type hook struct {
	armed atomic.Bool
	fn    func()
}

func (h *hook) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Method == http.MethodPost && h.armed.CompareAndSwap(true, false) && req.Raw().URL.Path != "" && isBatch(req) {
		h.fn()
	}
	return req.Next()
}

func isBatch(req *policy.Request) bool {
	p := req.Raw().URL.Path
	return len(p) >= len("$batch") && p[len(p)-len("$batch"):] == "$batch"
}

// records is a slog.Handler that keeps every record with its attributes
// as text.
type records struct {
	mu   sync.Mutex
	list []struct {
		slog.Record
		attrs map[string]string
	}
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, struct {
		slog.Record
		attrs map[string]string
	}{r, attrs})
	return nil
}

func TestMigrationMovesOnlyWhatMoves(t *testing.T) {
	ctx := t.Context()
	svcs := []*fake.TableService{fake.NewTableService(nil), fake.NewTableService(nil), fake.NewTableService(nil)}
	names := []string{"a", "b", "c"}
	cfg := func(i int) accounts.Config { return fakeConfig(names[i], svcs[i]) }
	h := &hook{}
	oldA := cfg(0)
	oldA.ClientOptions = &aztables.ClientOptions{}
	oldA.ClientOptions.PerCallPolicies = []policy.Policy{h}
	from, _ := accounts.New([]accounts.Config{oldA, cfg(1)}, nil)
	to, _ := accounts.New([]accounts.Config{cfg(0), cfg(1), cfg(2)}, nil)
	if err := to.CreateTable(ctx, "orders", nil); err != nil {
		t.Fatal(err)
	}
	var ops []batch.Op
	for p := range 60 {
		for i := range 5 {
			ops = append(ops, batch.Add(&order{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%02d", p), RowKey: fmt.Sprint(i)}, Amount: int64(p*10 + i)}))
		}
	}
	if _, err := from.Write(ctx, "orders", slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	m, _ := accounts.NewMigration(from, to)
	movedParts := 0
	var victim string
	for p := range 60 {
		pk := fmt.Sprintf("p%02d", p)
		if f, _, ok := m.Moved(pk); ok {
			movedParts++
			if victim == "" && f.Name() == "a" {
				victim = pk
			}
		}
		if order := m.ReadOrder(pk); len(order) == 2 && order[1].Name() != "c" {
			t.Fatal("ReadOrder must end with the new account")
		}
	}
	if victim == "" || movedParts == 0 {
		t.Fatal("no partition of a moves; pick other keys")
	}
	// A writer ignores the pause: between the copy and the delete of the
	// first partition a moves, it changes one of its entities.
	h.fn = func() {
		tb, _ := table.New[order](svcs[0].NewClient("orders", nil), nil)
		if _, err := tb.Modify(ctx, victim, "3", func(o *order) error { o.Amount = -1; return nil }, nil); err != nil {
			t.Error(err)
		}
	}
	h.armed.Store(true)
	logs := &records{}
	sum, err := m.MoveTable(ctx, "orders", &accounts.MoveTableOptions{Logger: slog.New(logs)})
	if !errors.Is(err, accounts.ErrChangedDuringMove) || sum.Changed != 5 || sum.Partitions != movedParts || sum.Copied != 5*movedParts || sum.Deleted != 5*movedParts-5 {
		t.Fatalf("first pass: %+v, %v", sum, err)
	}
	// The Logger saw each moved partition (5 entities: one group each):
	// one warning, for the changed one, and an info record for the others.
	infos, warns := 0, 0
	for _, r := range logs.list {
		switch {
		case r.Level == slog.LevelInfo && r.attrs["entities"] == "5":
			infos++
		case r.Level == slog.LevelWarn && r.attrs["partition"] == victim && r.attrs["from"] == "a" && r.attrs["err"] != "":
			warns++
		default:
			t.Errorf("unexpected record %s %q %v", r.Level, r.Message, r.attrs)
		}
	}
	if infos != movedParts-1 || warns != 1 {
		t.Errorf("%d info and %d warning records, want %d and 1", infos, warns, movedParts-1)
	}
	// The changed entity is still in its old account with its change.
	tb, _ := table.New[order](svcs[0].NewClient("orders", nil), nil)
	if o, err := tb.Get(ctx, victim, "3", nil); err != nil || o.Amount != -1 {
		t.Fatalf("the changed entity: %+v, %v", o, err)
	}
	// The rerun moves it, with its change.
	sum, err = m.MoveTable(ctx, "orders", nil)
	if err != nil || sum.Partitions != 1 || sum.Deleted != 5 {
		t.Fatalf("second pass: %+v, %v", sum, err)
	}
	if sum, err = m.MoveTable(ctx, "orders", nil); err != nil || sum.Partitions != 0 {
		t.Fatalf("third pass: %+v, %v", sum, err)
	}
	total := 0
	for i, svc := range svcs {
		total += svc.Len("orders")
		cl, _ := table.New[order](svc.NewClient("orders", nil), nil)
		for o, err := range cl.Query(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if to.For(o.PartitionKey).Name() != names[i] {
				t.Fatalf("%s/%s left in %s", o.PartitionKey, o.RowKey, names[i])
			}
			if o.PartitionKey == victim && o.RowKey == "3" && o.Amount != -1 {
				t.Fatal("the change made during the move was lost")
			}
		}
	}
	if total != 300 {
		t.Fatalf("%d entities in all, want 300", total)
	}
}

func TestRouterWriteStopsOnlyTheAccountOfABadOperation(t *testing.T) {
	ctx := t.Context()
	east, west := fake.NewTableService(nil), fake.NewTableService(nil)
	r, _ := accounts.New([]accounts.Config{fakeConfig("east", east), fakeConfig("west", west)}, nil)
	if err := r.CreateTable(ctx, "orders", nil); err != nil {
		t.Fatal(err)
	}
	// Find a partition of each account.
	pks := map[string]string{}
	for i := 0; len(pks) < 2; i++ {
		pk := fmt.Sprint("p", i)
		if _, ok := pks[r.For(pk).Name()]; !ok {
			pks[r.For(pk).Name()] = pk
		}
	}
	var ops []batch.Op
	for i := range 500 {
		for _, name := range []string{"east", "west"} {
			rk := fmt.Sprint(i)
			if name == "east" && i == 250 {
				rk = "bad#key" // refused before sending: east's writer stops here
			}
			ops = append(ops, batch.Add(&order{Meta: table.Meta{PartitionKey: pks[name], RowKey: rk}}))
		}
	}
	sum, err := r.Write(ctx, "orders", slices.Values(ops), &batch.WriterOptions{Parallelism: 1})
	var oe *batch.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("want the bad operation's error: %v", err)
	}
	// West got everything; east stopped at (or before) its bad operation
	// and the rest of its feed was skipped, without blocking west.
	if west.Len("orders") != 500 || east.Len("orders") > 250 || sum.Operations != 500+east.Len("orders") || sum.Skipped == 0 {
		t.Fatalf("east %d, west %d, %+v", east.Len("orders"), west.Len("orders"), sum)
	}
}

// loseBatch loses the answer of the next transaction once armed: the
// service did it, the client sees a broken connection, the SDK retries.
type loseBatch struct{ armed atomic.Bool }

func (l *loseBatch) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil && isBatch(req) && l.armed.CompareAndSwap(true, false) {
		resp.Body.Close()
		return nil, errors.New("connection reset after the service answered")
	}
	return resp, err
}

func TestMigrationSettlesALostDeleteAnswer(t *testing.T) {
	ctx := t.Context()
	a, b := fake.NewTableService(nil), fake.NewTableService(nil)
	lose := &loseBatch{}
	oldA := fakeConfig("a", a)
	oldA.ClientOptions = &aztables.ClientOptions{}
	oldA.ClientOptions.PerRetryPolicies = []policy.Policy{lose}
	oldA.ClientOptions.Retry.RetryDelay = time.Millisecond
	from, _ := accounts.New([]accounts.Config{oldA}, nil)
	to, _ := accounts.New([]accounts.Config{fakeConfig("a", a), fakeConfig("b", b)}, nil)
	_ = to.CreateTable(ctx, "orders", nil)
	var ops []batch.Op
	for p := range 10 {
		ops = append(ops, batch.Add(&order{Meta: table.Meta{PartitionKey: fmt.Sprint("p", p), RowKey: "1"}}))
	}
	if _, err := from.Write(ctx, "orders", slices.Values(ops), nil); err != nil {
		t.Fatal(err)
	}
	m, _ := accounts.NewMigration(from, to)
	lose.armed.Store(true) // the first delete's answer is lost
	sum, err := m.MoveTable(ctx, "orders", nil)
	if err != nil || sum.Deleted != sum.Copied || sum.Copied == 0 || lose.armed.Load() {
		t.Fatalf("%+v, %v (lost: %v)", sum, err, !lose.armed.Load())
	}
	if a.Len("orders")+b.Len("orders") != 10 {
		t.Fatalf("%d + %d entities", a.Len("orders"), b.Len("orders"))
	}
}
