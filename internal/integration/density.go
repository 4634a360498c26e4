package integration

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// Order is an entity of the query density cases.
type Order struct {
	table.Meta
	Status string
}

// densityWarnings counts the Warn records of a Table's logger.
type densityWarnings struct {
	mu sync.Mutex
	n  int
	at []map[string]string
}

func (w *densityWarnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *densityWarnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	w.n++
	w.at = append(w.at, m)
	return nil
}
func (w *densityWarnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *densityWarnings) WithGroup(string) slog.Handler      { return w }

// splittingFakeEnv is the fake with the service's paging freedoms on: a
// page ends at every partition boundary, and every second page that has
// more to come is empty, so low-density queries happen on it.
func splittingFakeEnv() Env {
	env := FakeEnv()
	svc := fake.NewTableService(&fake.TableServiceOptions{Paging: &fake.Paging{EmptyPageEvery: 2}})
	env.Name = "fake (pages split at partitions, every second page empty)"
	env.NewTable = func(t *testing.T, c *reqcount.Counter) *aztables.Client {
		sc := svc.NewServiceClient(c.TableOptions())
		name := testenv.UniqueName("conf")
		if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
			t.Fatal(err)
		}
		c.Reset()
		return sc.NewClient(name)
	}
	return env
}

// RunQueryDensity checks that the figures table.QueryStats reports are
// the requests the backend really answered (counted on the wire) and the
// entities it returned, page by page, and that a dense query is not
// flagged. A backend that never ends a page early (before 1,000 entities
// or $top) cannot run a query at low density; the case then says so.
func RunQueryDensity(t *testing.T, env Env) {
	ctx := t.Context()
	rc := &reqcount.Counter{}
	client := env.NewTable(t, rc)
	w := &densityWarnings{}
	tbl, err := table.New[Order](client, &table.Options{Name: "orders", Logger: slog.New(w)})
	if err != nil {
		t.Fatal(err)
	}
	for p := range 5 {
		for r := range 7 {
			status := "shipped"
			if r == 3 {
				status = "lost"
			}
			if err := tbl.Upsert(ctx, &Order{Meta: table.Meta{PartitionKey: fmt.Sprintf("c%02d", p), RowKey: fmt.Sprintf("o%03d", r)}, Status: status}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("pages of $top: the figures are the wire's", func(t *testing.T) {
		rc.Reset()
		st := table.QueryStats{Label: "all orders, 10 a page"}
		sctx := table.WithQueryStats(ctx, &st)
		next, n, pages, empty := "", 0, 0, 0
		for {
			p, err := tbl.QueryPage(sctx, next, &table.QueryOptions{Top: 10})
			if err != nil {
				t.Fatal(err)
			}
			n += len(p.Items)
			pages++
			if next = p.Next; next == "" {
				break
			}
			if len(p.Items) == 0 {
				empty++
			}
		}
		// 4 pages of 10, 10, 10 and 5 from a backend that ends pages only
		// at $top; more from one that also ends them at partitions.
		if n != 35 || st.Requests != pages || rc.N() != pages || pages < 4 || st.Entities != 35 || st.EmptyPages != empty || !st.Done || st.Kind != table.TableScan {
			t.Fatalf("%d entities in %d pages (%d empty), %d requests on the wire; stats %+v", n, pages, empty, rc.N(), st)
		}
	})

	t.Run("a sparse table scan: figures, and the warning when the backend ends pages early", func(t *testing.T) {
		rc.Reset()
		st := table.QueryStats{Label: "lost orders"}
		got, err := seqs.Collect(tbl.Query(table.WithQueryStats(ctx, &st), &table.QueryOptions{Filter: table.Prop("Status").Eq("lost")}))
		if err != nil || len(got) != 5 {
			t.Fatalf("%d orders, %v", len(got), err)
		}
		if st.Requests != rc.N() || st.Entities != 5 || !st.Done || st.Kind != table.TableScan || st.Filter != "Status eq 'lost'" {
			t.Fatalf("stats %+v, %d requests on the wire", st, rc.N())
		}
		low := st.Requests >= 5 && float64(st.Entities) < 1.0*float64(st.Requests)
		if st.LowDensity != low || (w.n == 1) != low {
			t.Fatalf("LowDensity %v, %d densityWarnings, for %d entities in %d requests", st.LowDensity, w.n, st.Entities, st.Requests)
		}
		if low && (w.at[0]["label"] != "lost orders" || w.at[0]["requests"] != fmt.Sprint(st.Requests) || w.at[0]["entities"] != "5") {
			t.Fatalf("warning %v", w.at[0])
		}
		if !low {
			t.Logf("not run on %s: the low-density warning: it answered the scan in %d request(s); it ends a page only at 1,000 entities or $top, never at a partition boundary or after 5 s as the service may", env.Name, st.Requests)
		}
	})

	t.Run("a point query is not judged", func(t *testing.T) {
		// One request, or two when the backend sends an empty page first.
		w.n = 0
		st := table.QueryStats{}
		got, err := seqs.Collect(tbl.Query(table.WithQueryStats(ctx, &st), &table.QueryOptions{Filter: table.Partition("c01").And(table.Prop("RowKey").Eq("o003"))}))
		if err != nil || len(got) != 1 || st.Kind != table.PointQuery || st.Requests < 1 || st.Requests >= 5 || st.Entities != 1 || st.LowDensity || w.n != 0 {
			t.Fatalf("%d entities, %v; stats %+v", len(got), err, st)
		}
	})
}
