package table_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/table"
)

// records keeps the slog records a test asserts.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) attrs(i int) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]string{"level": r.recs[i].Level.String(), "msg": r.recs[i].Message}
	r.recs[i].Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

type order struct {
	table.Meta
	Status string
}

// sparse fills ten partitions of 50 orders with one "lost" order each, on
// a fake that ends pages at partition boundaries and sends every second
// page empty, as the service does when a scan runs long.
func sparse(t *testing.T) (*table.Table[order], *records) {
	t.Helper()
	client := fake.NewTableService(&fake.TableServiceOptions{Paging: &fake.Paging{EmptyPageEvery: 2}}).NewClient("orders", nil)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	rec := &records{}
	tbl, err := table.New[order](client, &table.Options{Name: "orders", Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	for p := range 10 {
		for r := range 50 {
			status := "shipped"
			if r == 25 {
				status = "lost"
			}
			if err := tbl.Upsert(t.Context(), &order{Meta: table.Meta{PartitionKey: fmt.Sprintf("c%02d", p), RowKey: fmt.Sprintf("o%03d", r)}, Status: status}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tbl, rec
}

// TestQueryDensityLowWarns: a table scan for one order per partition
// spends 19 requests (10 pages of one entity, 9 empty pages between them)
// for 10 entities: 0.53 per request, below the threshold of 1.
func TestQueryDensityLowWarns(t *testing.T) {
	tbl, rec := sparse(t)
	var st table.QueryStats
	st.Label = "lost orders"
	ctx := table.WithQueryStats(t.Context(), &st)
	got, err := seqs.Collect(tbl.Query(ctx, &table.QueryOptions{Filter: table.Prop("Status").Eq("lost")}))
	if err != nil || len(got) != 10 {
		t.Fatalf("%d orders, %v", len(got), err)
	}
	want := table.QueryStats{Label: "lost orders", Kind: table.TableScan, Filter: "Status eq 'lost'", Requests: 19, EmptyPages: 9, Entities: 10, Done: true, LowDensity: true}
	if fmt.Sprintf("%+v", st) != fmt.Sprintf("%+v", withPrivate(want, st)) {
		t.Fatalf("stats %+v", st)
	}
	if len(rec.recs) != 1 {
		t.Fatalf("%d records", len(rec.recs))
	}
	a := rec.attrs(0)
	for k, v := range map[string]string{"level": "WARN", "label": "lost orders", "table": "orders", "kind": "table scan", "filter": "Status eq 'lost'", "requests": "19", "entities": "10", "empty_pages": "9", "done": "true"} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q (record %v)", k, a[k], v, a)
		}
	}
	if st.EntitiesPerRequest() != 10.0/19 {
		t.Fatalf("EntitiesPerRequest %v", st.EntitiesPerRequest())
	}
}

// withPrivate copies the unexported bookkeeping of got into want, so that
// the printed forms compare only the exported figures.
func withPrivate(want, got table.QueryStats) table.QueryStats {
	got.Label, got.Kind, got.Filter, got.Requests, got.EmptyPages, got.Entities, got.Done, got.LowDensity =
		want.Label, want.Kind, want.Filter, want.Requests, want.EmptyPages, want.Entities, want.Done, want.LowDensity
	return got
}

// TestQueryDensityDenseIsQuiet: a partition query over the same data is
// one or two requests and is not judged; nor is a query with no logger
// or stats (Query then keeps its own figures, and only logs).
func TestQueryDensityDenseIsQuiet(t *testing.T) {
	tbl, rec := sparse(t)
	var st table.QueryStats
	ctx := table.WithQueryStats(t.Context(), &st)
	got, err := seqs.Collect(tbl.Query(ctx, &table.QueryOptions{Filter: table.Partition("c03")}))
	if err != nil || len(got) != 50 {
		t.Fatalf("%d orders, %v", len(got), err)
	}
	if st.Kind != table.PartitionScan || st.Entities != 50 || st.LowDensity || !st.Done || st.Requests != 1 {
		t.Fatalf("stats %+v", st)
	}
	if len(rec.recs) != 0 {
		t.Fatalf("warned: %v", rec.attrs(0))
	}
}

// TestQueryDensityAbandoned: a caller that stops early still gets the
// query judged on what it spent.
func TestQueryDensityAbandoned(t *testing.T) {
	tbl, rec := sparse(t)
	var st table.QueryStats
	n := 0
	for _, err := range tbl.Query(table.WithQueryStats(t.Context(), &st), &table.QueryOptions{Filter: table.Prop("Status").Eq("lost")}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 4 { // pages 1, 3, 5, 7 gave one each: 7 requests
			break
		}
	}
	if st.Requests != 7 || st.Entities != 4 || st.EmptyPages != 3 || st.Done || !st.LowDensity || len(rec.recs) != 1 {
		t.Fatalf("stats %+v, %d records", st, len(rec.recs))
	}
}

// TestQueryPageDensity: QueryPage calls sharing one QueryStats add up and
// are judged on the last page.
func TestQueryPageDensity(t *testing.T) {
	tbl, rec := sparse(t)
	st := table.QueryStats{Label: "paged"}
	ctx := table.WithQueryStats(t.Context(), &st)
	opts := &table.QueryOptions{Filter: table.Prop("Status").Eq("lost")}
	next, entities := "", 0
	for {
		p, err := tbl.QueryPage(ctx, next, opts)
		if err != nil {
			t.Fatal(err)
		}
		entities += len(p.Items)
		if next = p.Next; next == "" {
			break
		}
		if len(rec.recs) != 0 {
			t.Fatal("judged before the last page")
		}
	}
	if entities != 10 || st.Requests != 19 || st.EmptyPages != 9 || !st.LowDensity || len(rec.recs) != 1 || rec.attrs(0)["label"] != "paged" {
		t.Fatalf("stats %+v, %d records", st, len(rec.recs))
	}
}
