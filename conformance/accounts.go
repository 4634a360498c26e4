package conformance

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// twoAccounts is two storage accounts of one backend (Harness and
// Harness.Second).
type twoAccounts struct {
	Name    string
	Connect [2]connectFunc
}

// typedEntity is an entity with a property of every EDM type, for copies that
// must keep them.
type typedEntity struct {
	table.Meta
	S  string
	B  bool
	I  int32
	L  int64
	D  float64
	T  time.Time
	G  table.GUID
	Bn []byte
}

type connectFunc = func(*aztables.ClientOptions) (*aztables.ServiceClient, error)

// batchHook runs fn before the next transaction of the clients whose
// pipeline it is in, once armed: the forced interleaving of a move.
type batchHook struct {
	armed atomic.Bool
	fn    func()
}

func (h *batchHook) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().Method == http.MethodPost && strings.HasSuffix(req.Raw().URL.Path, "$batch") && h.armed.CompareAndSwap(true, false) {
		h.fn()
	}
	return req.Next()
}

// loseNextBatch loses the answer of the next transaction once armed: the
// service did it, the client sees a broken connection and the SDK retries.
type loseNextBatch struct{ armed atomic.Bool }

func (l *loseNextBatch) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil && req.Raw().Method == http.MethodPost && strings.HasSuffix(req.Raw().URL.Path, "$batch") && l.armed.CompareAndSwap(true, false) {
		resp.Body.Close()
		return nil, errors.New("conformance: connection reset after the service answered")
	}
	return resp, err
}

// runAccounts runs the multi-account router (package accounts) on two
// accounts of one backend.
func runAccounts(t *testing.T, env twoAccounts) {
	ctx := t.Context()
	names := [2]string{"one", "two"}
	config := func(i int, opts *aztables.ClientOptions) accounts.Config {
		return accounts.Config{Name: names[i], Connect: env.Connect[i], ClientOptions: opts}
	}
	both, err := accounts.New([]accounts.Config{config(0, nil), config(1, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	newTable := func(t *testing.T, r *accounts.Router) string {
		name := testenv.UniqueName("acct")
		if err := r.CreateTable(ctx, name, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, a := range both.Accounts() {
				_, _ = a.Service().DeleteTable(ctx, name, nil)
			}
		})
		return name
	}
	// scan returns each account's entities of table name.
	scan := func(t *testing.T, name string) map[string][]*typedEntity {
		out := map[string][]*typedEntity{}
		for _, a := range both.Accounts() {
			tb, _ := table.New[typedEntity](a.Table(name), nil)
			for e, err := range tb.Query(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				out[a.Name()] = append(out[a.Name()], e)
			}
		}
		return out
	}
	typed := func(pk, rk string, n int64) *typedEntity {
		return &typedEntity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}, S: "s" + rk, B: n%2 == 0, I: int32(n), L: n << 40, D: float64(n) + 0.25,
			T: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Hour), G: table.GUID{byte(n), 1, 2, 3}, Bn: []byte{byte(n), 0, 255}}
	}

	t.Run("each partition lives in its account only", func(t *testing.T) {
		name := newTable(t, both)
		var ops []batch.Op
		for p := range 40 {
			for i := range 5 {
				ops = append(ops, batch.Add(typed(fmt.Sprintf("p%02d", p), fmt.Sprint(i), int64(p*5+i))))
			}
		}
		sum, err := both.Write(ctx, name, slices.Values(ops), nil)
		if err != nil || sum.Operations != 200 || sum.Transactions != 40 {
			t.Fatalf("Write: %+v, %v", sum, err)
		}
		got := scan(t, name)
		if len(got["one"]) == 0 || len(got["two"]) == 0 || len(got["one"])+len(got["two"]) != 200 {
			t.Fatalf("one holds %d, two %d", len(got["one"]), len(got["two"]))
		}
		for acct, es := range got {
			for _, e := range es {
				if both.For(e.PartitionKey).Name() != acct {
					t.Fatalf("%s is in %s, routed to %s", e.PartitionKey, acct, both.For(e.PartitionKey).Name())
				}
			}
		}
	})

	t.Run("a move keeps every EDM type, and a write during it", func(t *testing.T) {
		hook := &batchHook{}
		old, err := accounts.New([]accounts.Config{config(0, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{PerCallPolicies: []policy.Policy{hook}}})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := newTable(t, both)
		want := map[string]*typedEntity{}
		var ops []batch.Op
		for p := range 12 {
			for i := range 3 {
				e := typed(fmt.Sprintf("p%02d", p), fmt.Sprint(i), int64(p*3+i))
				want[e.PartitionKey+"/"+e.RowKey] = e
				ops = append(ops, batch.Add(e))
			}
		}
		if _, err := old.Write(ctx, name, slices.Values(ops), nil); err != nil {
			t.Fatal(err)
		}
		m, _ := accounts.NewMigration(old, both)
		victim := ""
		moved := 0
		for p := range 12 {
			if _, _, ok := m.Moved(fmt.Sprintf("p%02d", p)); ok {
				moved++
				if victim == "" {
					victim = fmt.Sprintf("p%02d", p)
				}
			}
		}
		if moved == 0 || moved == 12 {
			t.Fatalf("%d of 12 partitions move; pick other keys", moved)
		}
		// Between the copy of the first moved partition and its delete,
		// a writer that ignored the pause changes one of its entities.
		direct, _ := table.New[typedEntity](old.Accounts()[0].Table(name), nil)
		hook.fn = func() {
			if _, err := direct.Modify(ctx, victim, "1", func(e *typedEntity) error { e.S = "changed"; return nil }, nil); err != nil {
				t.Error(err)
			}
		}
		hook.armed.Store(true)
		sum, err := m.MoveTable(ctx, name, nil)
		if !errors.Is(err, accounts.ErrChangedDuringMove) || sum.Changed != 3 || sum.Partitions != moved || sum.Deleted != 3*moved-3 {
			t.Fatalf("first pass: %+v, %v", sum, err)
		}
		if sum, err = m.MoveTable(ctx, name, nil); err != nil || sum.Partitions != 1 || sum.Deleted != 3 {
			t.Fatalf("second pass: %+v, %v", sum, err)
		}
		want[victim+"/1"].S = "changed"
		got := scan(t, name)
		n := 0
		for acct, es := range got {
			for _, e := range es {
				n++
				if both.For(e.PartitionKey).Name() != acct {
					t.Fatalf("%s/%s left in %s", e.PartitionKey, e.RowKey, acct)
				}
				w := want[e.PartitionKey+"/"+e.RowKey]
				e.Meta, w.Meta = table.Meta{}, table.Meta{}
				if fmt.Sprintf("%+v", *e) != fmt.Sprintf("%+v", *w) {
					t.Fatalf("moved entity differs:\n got %+v\nwant %+v", *e, *w)
				}
			}
		}
		if n != 36 {
			t.Fatalf("%d entities after the move, want 36", n)
		}
	})

	t.Run("a move whose delete answer was lost settles it with a read", func(t *testing.T) {
		lose := &loseNextBatch{}
		opts := &aztables.ClientOptions{}
		opts.PerRetryPolicies = []policy.Policy{lose}
		opts.Retry.RetryDelay = time.Millisecond
		old, _ := accounts.New([]accounts.Config{config(0, opts)}, nil)
		name := newTable(t, both)
		var ops []batch.Op
		for p := range 10 {
			ops = append(ops, batch.Add(typed(fmt.Sprintf("p%02d", p), "1", int64(p))))
		}
		if _, err := old.Write(ctx, name, slices.Values(ops), nil); err != nil {
			t.Fatal(err)
		}
		m, _ := accounts.NewMigration(old, both)
		lose.armed.Store(true)
		sum, err := m.MoveTable(ctx, name, nil)
		if err != nil || sum.Copied == 0 || sum.Deleted != sum.Copied || lose.armed.Load() {
			t.Fatalf("%+v, %v (answer lost: %v)", sum, err, !lose.armed.Load())
		}
		got := scan(t, name)
		if len(got["one"])+len(got["two"]) != 10 {
			t.Fatalf("%d + %d entities", len(got["one"]), len(got["two"]))
		}
	})

	t.Run("event streams through the router", func(t *testing.T) {
		name := newTable(t, both)
		streams := map[*accounts.Account]*eventstream.Store[deposit]{}
		for _, a := range both.Accounts() {
			s, err := eventstream.New[deposit](a.Table(name), nil)
			if err != nil {
				t.Fatal(err)
			}
			streams[a] = s
		}
		for i := range 8 {
			id := fmt.Sprint("acct-", i)
			if _, err := streams[both.For(id)].Append(ctx, eventstream.NewHead(id), deposits("e", 3, int64(i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		for a, s := range streams {
			for i := range 8 {
				id := fmt.Sprint("acct-", i)
				h, err := s.Open(ctx, id, nil)
				if err != nil {
					t.Fatal(err)
				}
				if home := both.For(id) == a; (h.Version() == 3) != home || (!home && h.Version() != 0) {
					t.Fatalf("stream %s at version %d in %s (its account: %s)", id, h.Version(), a.Name(), both.For(id).Name())
				}
			}
		}
	})
}

// deposit is an event of an account's stream.
type deposit struct {
	eventstream.Event
	Amount int64
	Note   string
}

// deposits makes n deposits of amount, with IDs prefix0, prefix1, … (none
// when prefix is empty).
func deposits(prefix string, n int, amount int64) []*deposit {
	out := make([]*deposit, n)
	for i := range out {
		out[i] = &deposit{Amount: amount, Note: fmt.Sprint(prefix, i)}
		if prefix != "" {
			out[i].ID = fmt.Sprint(prefix, i)
		}
	}
	return out
}
