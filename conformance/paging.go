package conformance

import (
	"github.com/tablekit/tablekit/internal/tableio"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// nameTable records that client is the table name, for the paging
// switches.
func (env backend) nameTable(client *aztables.Client, name string) {
	if env.tables != nil {
		env.tables.Store(client, name)
	}
}

// tableName is the name of the table NewTable made client for.
func (env backend) tableName(t testing.TB, client *aztables.Client) string {
	t.Helper()
	name, ok := env.tables.Load(client)
	if !ok {
		t.Fatalf("conformance: a paging switch on a table this backend did not create")
	}
	return name.(string)
}

// wantPagedRequests checks a request count that depends on how the
// backend pages: service is the count where pages end as the service ends
// them (after 1,000 entities and where a partition ends in a query that
// spans partitions), and a backend with the service's paging model
// (Harness.Paging, not adversarial) must cost exactly that; least is the
// count where pages end only at 1,000 entities (Azurite), most the most
// the case allows with the empty pages the service may send (an
// adversarial paging model). Any other backend must fall in [least, most].
func wantPagedRequests(t *testing.T, env backend, c *reqcount.Counter, least, service, most int, what string) {
	t.Helper()
	got := c.N()
	switch {
	case env.paging != nil && !env.paging.Adversarial():
		if got != service {
			t.Errorf("%s cost %d requests on the service's paging, want %d", what, got, service)
		}
	case got < least || got > most:
		t.Errorf("%s cost %d requests, want %d with pages of 1,000 up to %d with pages cut at partitions and empty pages", what, got, least, most)
	}
	c.Reset()
}

// setScanCost makes a backend with a paging model spend the 5 s budget of
// one response sooner on client's table, for a case that must meet a
// spent budget without thousands of entities; why says what for. Other
// backends page as they do, and the case must hold there too.
func (env backend) setScanCost(t testing.TB, client *aztables.Client, perEntity time.Duration, why string) {
	t.Helper()
	if env.paging == nil {
		return
	}
	env.paging.SetScanCost(env.tableName(t, client), perEntity)
	t.Logf("%s: scan cost %v per entity on this table: %s", env.Name, perEntity, why)
}

// runPaging runs what a client may rely on in a query's pages, whatever
// the backend cuts: a page holds at most 1,000 entities, may end anywhere
// (at a partition boundary, or when the service's 5 s budget for one
// response runs out) and may be empty yet carry a continuation token;
// only a page without a token ends the query. The SDK's pager, table.Query
// and table.QueryPage must each deliver every match, in order. Each
// backend's page sizes are logged: the fake cuts pages as
// the zero fake.Paging says, and AdversarialFakeEnv as Paging{EmptyPageEvery: 3}
// does (both here with a budget spent after 100 examined entities);
// Azurite 3.37 fills pages to 1,000 (or $top).
func runPaging(t *testing.T, env backend) {
	ctx := t.Context()

	t.Run("queries follow tokens through partition ends, empty pages and spent scan budgets", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		env.setScanCost(t, client, 50*time.Millisecond, "the 5 s budget is spent after 100 examined entities, so that a selective filter meets it without 5,000 entities")
		tb, err := table.New[employee](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		const perPartition = 150
		pks := []string{"a", "b", "c"}
		for _, pk := range pks {
			for from := 0; from < perPartition; from += maxBatch {
				var actions []aztables.TransactionAction
				for i := from; i < min(from+maxBatch, perPartition); i++ {
					body, err := tableio.For(tb).Encode(&employee{Meta: table.Meta{PartitionKey: pk, RowKey: keys.Int64(int64(i))}, Age: i})
					if err != nil {
						t.Fatal(err)
					}
					actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
				}
				if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, q := range []struct {
			name   string
			filter table.Filter
			want   func(pk string, age int) bool
		}{
			{"everything", table.Filter{}, func(string, int) bool { return true }},
			{"the last entity of each partition", table.Prop("Age").Eq(perPartition - 1), func(_ string, age int) bool { return age == perPartition-1 }},
			{"the tail of one partition", table.Prop("PartitionKey").Eq("c").And(table.Prop("Age").Ge(140)), func(pk string, age int) bool { return pk == "c" && age >= 140 }},
		} {
			var want []string
			for _, pk := range pks {
				for i := 0; i < perPartition; i++ {
					if q.want(pk, i) {
						want = append(want, pk+"/"+keys.Int64(int64(i)))
					}
				}
			}
			opts := &table.QueryOptions{Filter: q.filter}
			// The SDK's pager, page by page.
			var listOpts *aztables.ListEntitiesOptions
			if !q.filter.IsZero() {
				f, err := q.filter.Build()
				if err != nil {
					t.Fatal(err)
				}
				listOpts = &aztables.ListEntitiesOptions{Filter: &f}
			}
			var sizes []int
			var got []string
			pager := client.NewListEntitiesPager(listOpts)
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Entities) > maxPageEntities {
					t.Fatalf("%s: a page of %d entities; the service sends at most %d", q.name, len(page.Entities), maxPageEntities)
				}
				sizes = append(sizes, len(page.Entities))
				for _, raw := range page.Entities {
					var e employee
					if err := tableio.For(tb).Decode(raw, &e); err != nil {
						t.Fatal(err)
					}
					got = append(got, e.PartitionKey+"/"+e.RowKey)
				}
				if len(sizes) > 100 {
					t.Fatalf("%s: paging does not end", q.name)
				}
			}
			t.Logf("%s: %s: pages of %v", env.Name, q.name, sizes)
			if !slices.Equal(got, want) {
				t.Fatalf("%s through the SDK's pager: %d entities, want %d\n got %q\nwant %q", q.name, len(got), len(want), got, want)
			}
			// table.Query, the iterator.
			all, err := seqs.Collect(tb.Query(ctx, opts))
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, e := range all {
				got = append(got, e.PartitionKey+"/"+e.RowKey)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s through table.Query: %q, want %q", q.name, got, want)
			}
			// table.QueryPage with its string tokens, as across restarts.
			got = got[:0]
			token := ""
			for pages := 0; ; pages++ {
				p, err := tb.QueryPage(ctx, token, opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range p.Items {
					got = append(got, e.PartitionKey+"/"+e.RowKey)
				}
				if token = p.Next; token == "" {
					break
				}
				if pages > 100 {
					t.Fatalf("%s: QueryPage does not end", q.name)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s through table.QueryPage: %q, want %q", q.name, got, want)
			}
		}
	})

	t.Run("a page holds at most 1,000 entities", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		tb, err := table.New[employee](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		const n = maxPageEntities + 1
		for from := 0; from < n; from += maxBatch {
			var actions []aztables.TransactionAction
			for i := from; i < min(from+maxBatch, n); i++ {
				body, _ := tableio.For(tb).Encode(&employee{Meta: table.Meta{PartitionKey: "p", RowKey: keys.Int64(int64(i))}})
				actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
				t.Fatal(err)
			}
		}
		page, err := client.NewListEntitiesPager(nil).NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entities) > maxPageEntities || page.NextPartitionKey == nil {
			t.Fatalf("the first page of %d entities holds %d, token %v; want at most %d and a token", n, len(page.Entities), page.NextPartitionKey != nil, maxPageEntities)
		}
		all, err := seqs.Collect(tb.Query(ctx, nil))
		if err != nil || len(all) != n {
			t.Fatalf("Query: %d entities, %v; want %d", len(all), err, n)
		}
	})
}

// Service limits the paging cases rely on.
const (
	maxPageEntities = 1000 // Query Entities: at most 1,000 entities per response
	maxBatch        = 100  // an entity group transaction holds at most 100 operations
)
