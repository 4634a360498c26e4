package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// RunWirePath checks tablekit's two paths: its own wire path (clients
// built with table.ClientOptions, the default), where tablekit builds
// $batch bodies and decodes query pages and point reads from the raw
// response, and the SDK's path it falls back to on a client without the
// policy.
func RunWirePath(t *testing.T, env Env) {
	t.Run("quoted keys in batch updates and upserts", func(t *testing.T) { wireQuotedKeys(t, env) })
	t.Run("a client without the policy refuses quoted updates before sending", func(t *testing.T) { wireWithoutPolicy(t, env) })
	t.Run("differential: SDK path and own path", func(t *testing.T) { wireDifferential(t, env) })
	// The table and raw entity suites on both paths are conformance's
	// WirePath suite.
}

// withWirePath is env whose tables' clients have tablekit's policy (wire)
// or act as clients without it.
func withWirePath(env Env, wire bool) Env {
	w := env
	w.NewTable = func(t *testing.T, c *reqcount.Counter) *aztables.Client {
		client, _ := newTableOf(t, env, c, wire)
		return client
	}
	return w
}

// newWireTable is env.NewTable with tablekit's policy among the client's
// per-call policies, before the counter's per-retry policies.
func newWireTable(t *testing.T, env Env, c *reqcount.Counter) *aztables.Client {
	t.Helper()
	client, _ := newTableOf(t, env, c, true)
	return client
}

// newTableOf creates a fresh table through a client with or without
// tablekit's policy, whose requests c counts.
func newTableOf(t *testing.T, env Env, c *reqcount.Counter, wire bool) (*aztables.Client, string) {
	t.Helper()
	sc := serviceOf(t, env, c, wire)
	name := testenv.UniqueName("wire")
	if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), name, nil) })
	c.Reset()
	client := sc.NewClient(name)
	env.nameTable(client, name)
	return client, name
}

// serviceOf is a service client of env with or without tablekit's policy.
func serviceOf(t *testing.T, env Env, c *reqcount.Counter, wire bool) *aztables.ServiceClient {
	t.Helper()
	opts := c.TableOptions()
	if wire {
		opts = table.ClientOptions(opts)
	} else {
		// Whatever the backend's constructor adds (the fake's adds the
		// policy), the client takes the SDK's path.
		opts.PerCallPolicies = append(opts.PerCallPolicies, wirepolicy.Off{})
	}
	if env.NewServiceClient == nil {
		// RunAll does not run WirePath without it; a direct caller learns why.
		t.Fatalf("conformance: the WirePath suite needs Env.NewServiceClient, which %s leaves nil", env.Name)
	}
	return env.NewServiceClient(t, opts)
}

// wireQuotedKeys: keys holding a quote. On the wire path, batch
// updates and upserts work on keys with an apostrophe, in one request,
// and store exactly what the single-entity verbs would.
func wireQuotedKeys(t *testing.T, env Env) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	tb, err := table.New[table.Entity](newWireTable(t, env, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	const pk = "O'Brien's"
	mk := func(rk string, n int32) *table.Entity {
		e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
		e.Set("N", table.ValueOf(int32(n)))
		e.Set("Name", table.ValueOf("Don O'Brien"))
		return e
	}
	submit := func(ops ...batch.Op) (*batch.Result, error) {
		tx := batch.NewTransaction(nil)
		for _, op := range ops {
			if err := tx.Append(op); err != nil {
				return nil, err
			}
		}
		return tx.Submit(ctx, tb.Client(), nil)
	}
	a, b, q, qq := mk("emp_O'Brien", 1), mk("a'b'c", 1), mk("'", 1), mk("''", 1)
	if _, err := submit(batch.Add(a), batch.Add(b), batch.Add(q), batch.Add(qq)); err != nil {
		t.Fatal(err)
	}
	// Every kind that carries keys in the URL and the body, in one
	// transaction: guarded and unguarded updates, both upserts, a new row.
	a.Set("N", table.ValueOf(int32(2)))
	b.Set("N", table.ValueOf(int32(3)))
	delete(b.Properties, "Name")
	q.Set("N", table.ValueOf(int32(4)))
	qq.Set("N", table.ValueOf(int32(5)))
	fresh := mk("new'one", 6)
	oldTag := a.ETag
	c.Reset()
	res, err := submit(batch.Update(a, aztables.UpdateModeMerge), batch.Update(b, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny),
		batch.Upsert(q, aztables.UpdateModeMerge), batch.Upsert(qq, aztables.UpdateModeReplace), batch.Upsert(fresh, aztables.UpdateModeReplace))
	if err != nil {
		t.Fatalf("updates and upserts on %q: %v after %d requests", pk, err, c.N())
	}
	if c.N() != 1 {
		t.Fatalf("transaction took %d requests, want 1", c.N())
	}
	for i, e := range res.ETags {
		if e == "" {
			t.Errorf("operation %d: no ETag recovered", i)
		}
	}
	want := map[string]int32{"emp_O'Brien": 2, "a'b'c": 3, "'": 4, "''": 5, "new'one": 6}
	all, err := seqs.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != len(want) {
		t.Fatalf("stored %d entities (%v), want %d", len(all), err, len(want))
	}
	for _, e := range all {
		n, _ := e.Get("N")
		if e.PartitionKey != pk || !n.Equal(table.ValueOf(int32(want[e.RowKey]))) {
			t.Errorf("stored %q/%q N=%v, want N=%d", e.PartitionKey, e.RowKey, n, want[e.RowKey])
		}
		_, hasName := e.Get("Name")
		if hasName == (e.RowKey == "a'b'c") {
			t.Errorf("%q: Name present %v after a Replace without it", e.RowKey, hasName)
		}
		if e.ETag != res.ETags[0] && e.RowKey == "emp_O'Brien" {
			t.Errorf("%q: stored ETag %s, transaction said %s", e.RowKey, e.ETag, res.ETags[0])
		}
	}
	// A stale ETag still fails the whole transaction, naming the operation.
	stale := mk("emp_O'Brien", 9)
	stale.ETag = oldTag
	q.Set("N", table.ValueOf(int32(10)))
	c.Reset()
	_, err = submit(batch.Upsert(q, aztables.UpdateModeMerge), batch.Update(stale, aztables.UpdateModeMerge))
	var te *batch.TransactionError
	if !errors.As(err, &te) || te.Index != 1 || te.StatusCode != 412 || !table.Is(err, table.ErrPreconditionFailed) || c.N() != 1 {
		t.Fatalf("stale update on a quoted key: %v after %d requests, want 412 at operation 1", err, c.N())
	}
	if got, err := tb.Get(ctx, pk, "'", nil); err != nil || func() bool { n, _ := got.Get("N"); return !n.Equal(table.ValueOf(int32(4))) }() {
		t.Fatalf("failed transaction wrote: %v %v", got, err)
	}
}

// wireWithoutPolicy: on a client without tablekit's policy, a transaction
// with an update or upsert on a quoted key, which the SDK cannot send, is
// refused with ErrQuoteInKey (whose text says how to build the client)
// before anything reaches the service: the only try is tablekit's probe,
// whose context is already cancelled, so the transport refuses it. Adds
// and deletes on quoted keys still go the SDK's way, in one request.
func wireWithoutPolicy(t *testing.T, env Env) {
	ctx := t.Context()
	c := &reqcount.Counter{}
	plain, _ := newTableOf(t, env, c, false)
	tb, err := table.New[table.Entity](plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &table.Entity{Meta: table.Meta{PartitionKey: "O'Brien", RowKey: "r'1"}}
	e.Set("N", table.ValueOf(int32(1)))
	c.Reset()
	if _, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Add(e)}, nil); err != nil || c.N() != 1 {
		t.Fatalf("add on a quoted key without the policy: %v after %d requests, want 1", err, c.N())
	}
	e.Set("N", table.ValueOf(int32(2)))
	for _, op := range []batch.Op{batch.Upsert(e, aztables.UpdateModeMerge), batch.Update(e, aztables.UpdateModeReplace).IfMatch(azcore.ETagAny)} {
		c.Reset()
		var before int
		if env.Fake != nil {
			before = env.Fake.Count(fake.OpBatch)
		}
		_, err := batch.Submit(ctx, tb.Client(), []batch.Op{batch.Delete("O'Brien", "other"), op}, nil)
		var oe *batch.OpError
		if !errors.Is(err, batch.ErrQuoteInKey) || !errors.As(err, &oe) || oe.Index != 1 || !strings.Contains(err.Error(), "table.ClientOptions") || c.N() > 1 {
			t.Fatalf("%v on a quoted key without the policy: %v after %d tries, want ErrQuoteInKey at operation 1 naming table.ClientOptions, before any request", op.Kind, err, c.N())
		}
		if env.Fake != nil && env.Fake.Count(fake.OpBatch) != before {
			t.Fatalf("%v: the refused transaction reached the fake", op.Kind)
		}
	}
	got, err := tb.Get(ctx, "O'Brien", "r'1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := got.Get("N"); !n.Equal(table.ValueOf(int32(1))) {
		t.Fatalf("after refused transactions N = %v, want 1", n)
	}
}

// wireDifferential runs the same random transactions through the SDK path
// (table A, a client without the policy) and the own path (table B, with
// it), fuzzed over entity shapes: every EDM type, string and binary sizes
// up to a few KiB, keys with quotes, spaces and non-ASCII text. Each
// transaction must give the same outcome on both (success, or the same
// failed index, status and code) in one request each, and the tables the
// same entities, read through both query paths.
func wireDifferential(t *testing.T, env Env) {
	ctx := t.Context()
	ca, cb := &reqcount.Counter{}, &reqcount.Counter{}
	plainA, nameA := newTableOf(t, env, ca, false)
	wireB, nameB := newTableOf(t, env, cb, true)
	ta, _ := table.New[table.Entity](plainA, nil)
	tbw, _ := table.New[table.Entity](wireB, nil)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 7))
	keyRunes := []string{"a", "b", "Z", "0", "'", "''", " ", "é", "日本", "😀", "-", "_", "~", "%", "+", "(", ")", ",", "="}
	key := func() string {
		var sb strings.Builder
		for range 1 + rnd.IntN(6) {
			sb.WriteString(keyRunes[rnd.IntN(len(keyRunes))])
		}
		return sb.String()
	}
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(keyRunes[rnd.IntN(len(keyRunes))])
			if rnd.IntN(10) == 0 {
				sb.WriteString("\"\\\n\t<&>\u2028")
			}
		}
		return sb.String()
	}
	props := func() map[string]table.Value {
		m := map[string]table.Value{}
		for i := range rnd.IntN(12) {
			name := fmt.Sprintf("P%d", i)
			switch rnd.IntN(9) {
			case 0:
				m[name] = table.ValueOf(text(rnd.IntN(3000)))
			case 1:
				m[name] = table.ValueOf(rnd.IntN(2) == 0)
			case 2:
				m[name] = table.ValueOf(int32(int32(rnd.Uint32())))
			case 3:
				m[name] = table.ValueOf(int64(int64(rnd.Uint64())))
			case 4:
				m[name] = table.ValueOf(float64(rnd.NormFloat64() * 1e6))
			case 5:
				m[name] = table.ValueOf(time.Unix(rnd.Int64N(4e9), rnd.Int64N(1e9)/100*100).UTC())
			case 6:
				b := make([]byte, rnd.IntN(2000))
				for j := range b {
					b[j] = byte(rnd.UintN(256))
				}
				m[name] = table.ValueOf(b)
			case 7:
				var g table.GUID
				for j := range g {
					g[j] = byte(rnd.UintN(256))
				}
				m[name] = table.ValueOf(g)
			default:
				m[name] = table.ValueOf("")
			}
		}
		return m
	}
	quoted := func(k string) bool { return strings.Contains(k, "'") }
	pks := []string{key(), key(), "O'Brien"}
	var rows []string
	for range 8 {
		rows = append(rows, key())
	}
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	failed := 0
	for round := range rounds {
		pk := pks[rnd.IntN(len(pks))]
		used := map[string]bool{}
		var opsA, opsB []batch.Op
		for range 1 + rnd.IntN(6) {
			rk := rows[rnd.IntN(len(rows))]
			if used[rk] {
				continue
			}
			used[rk] = true
			p := props()
			mk := func() *table.Entity {
				e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}, Properties: map[string]table.Value{}}
				for k, v := range p {
					e.Properties[k] = v
				}
				return e
			}
			// Upserts weigh more, so that about half the rounds succeed.
			kind := [10]int{0, 1, 1, 1, 2, 2, 2, 3, 4, 5}[rnd.IntN(10)]
			if (quoted(pk) || quoted(rk)) && kind >= 1 && kind <= 4 {
				// The SDK's path cannot send these (ErrQuoteInKey);
				// wireQuotedKeys covers them on the own path.
				kind = 0
			}
			switch kind {
			case 0:
				opsA, opsB = append(opsA, batch.Add(mk())), append(opsB, batch.Add(mk()))
			case 1:
				opsA, opsB = append(opsA, batch.Upsert(mk(), aztables.UpdateModeMerge)), append(opsB, batch.Upsert(mk(), aztables.UpdateModeMerge))
			case 2:
				opsA, opsB = append(opsA, batch.Upsert(mk(), aztables.UpdateModeReplace)), append(opsB, batch.Upsert(mk(), aztables.UpdateModeReplace))
			case 3:
				opsA, opsB = append(opsA, batch.Update(mk(), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)), append(opsB, batch.Update(mk(), aztables.UpdateModeMerge).IfMatch(azcore.ETagAny))
			case 4:
				opsA, opsB = append(opsA, batch.Update(mk(), aztables.UpdateModeReplace).IfMatch(azcore.ETagAny)), append(opsB, batch.Update(mk(), aztables.UpdateModeReplace).IfMatch(azcore.ETagAny))
			default:
				opsA, opsB = append(opsA, batch.Delete(pk, rk)), append(opsB, batch.Delete(pk, rk))
			}
		}
		ca.Reset()
		cb.Reset()
		_, errA := batch.Submit(ctx, ta.Client(), opsA, nil)
		txB := batch.NewTransaction(nil)
		var errB error
		for _, op := range opsB {
			if errB = txB.Append(op); errB != nil {
				break
			}
		}
		if errB == nil {
			_, errB = txB.Submit(ctx, tbw.Client(), nil)
		}
		if ca.N() != cb.N() || ca.N() != 1 {
			t.Fatalf("round %d: %d requests on the SDK path, %d on the own path, want 1", round, ca.N(), cb.N())
		}
		if (errA == nil) != (errB == nil) {
			t.Fatalf("round %d: SDK path %v, own path %v", round, errA, errB)
		}
		if errA != nil {
			failed++
			var ea, eb *batch.TransactionError
			if !errors.As(errA, &ea) || !errors.As(errB, &eb) || ea.Index != eb.Index || ea.StatusCode != eb.StatusCode || ea.ErrorCode != eb.ErrorCode ||
				table.Is(errA, table.ErrNotFound) != table.Is(errB, table.ErrNotFound) || table.Is(errA, table.ErrLostRace) != table.Is(errB, table.ErrLostRace) {
				t.Fatalf("round %d: errors differ:\nSDK path: %v\nown path: %v", round, errA, errB)
			}
			var re *azcore.ResponseError
			if !errors.As(errB, &re) {
				t.Fatalf("round %d: own path error has no *azcore.ResponseError in its chain: %v", round, errB)
			}
		}
	}
	// Both tables, read through both query paths (a client with and one
	// without the policy, on each table), hold the same entities.
	read := func(c *aztables.Client) []*table.Entity {
		tb, _ := table.New[table.Entity](c, nil)
		all, err := seqs.Collect(tb.Query(ctx, nil))
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	views := [][]*table.Entity{
		read(plainA), read(serviceOf(t, env, &reqcount.Counter{}, true).NewClient(nameA)),
		read(wireB), read(serviceOf(t, env, &reqcount.Counter{}, false).NewClient(nameB)),
	}
	for i, v := range views[1:] {
		if len(v) != len(views[0]) {
			t.Fatalf("view %d: %d entities, SDK path view %d", i+1, len(v), len(views[0]))
		}
		for j, e := range v {
			w := views[0][j]
			if e.PartitionKey != w.PartitionKey || e.RowKey != w.RowKey || !e.SameProperties(w) {
				t.Fatalf("view %d, entity %d: %q/%q %v\nSDK path: %q/%q %v", i+1, j, e.PartitionKey, e.RowKey, e.Properties, w.PartitionKey, w.RowKey, w.Properties)
			}
		}
	}
	t.Logf("%d rounds (%d failed alike on both paths), %d entities stored", rounds, failed, len(views[0]))
	if failed == 0 || failed == rounds {
		t.Fatalf("%d of %d rounds failed: the rounds do not exercise both outcomes", failed, rounds)
	}
}
