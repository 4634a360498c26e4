package integration

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
)

// nameTable records that client is the table name, for friendlyPaging; a
// no-op on backends without a paging switch.
func (env Env) nameTable(client *aztables.Client, name string) {
	if env.tables != nil {
		env.tables.Store(client, name)
	}
}

// friendlyPaging makes the backend cut the query pages of client's table
// only at 1,000 entities, for a case whose request count assumes it; why
// says what the count shows and why it is not measured under adversarial
// paging. On AdversarialFakeEnv it switches the table to
// fake.Paging{AcrossPartitions: true}; FakeEnv keeps the service's paging.
// Azurite 3.37 pages so already: it ends a page only after 1,000
// entities (or $top), never at a partition boundary, and sends no empty
// page; on an account the count holds only where the service did not cut
// a page short, which the log line says.
func (env Env) friendlyPaging(t testing.TB, client *aztables.Client, why string) {
	t.Helper()
	if env.Fake == nil || env.tables == nil {
		t.Logf("%s: this case assumes pages of 1,000 entities: %s", env.Name, why)
		return
	}
	if !env.adversarial {
		return // the service's paging: the count is the service's own
	}
	name, ok := env.tables.Load(client)
	if !ok {
		t.Fatalf("conformance: friendlyPaging on a table this Env did not create")
	}
	env.Fake.SetPaging(name.(string), fake.Paging{AcrossPartitions: true})
	t.Logf("%s: friendly paging on this table: %s", env.Name, why)
}

// wantPagedRequests checks a request count that depends on how the
// backend pages: service is the count where pages end as the service ends
// them (after 1,000 entities and where a partition ends in a query that
// spans partitions), and the fake with its default paging must cost
// exactly that; least is the count where pages end only at 1,000 entities
// (Azurite), most the most the case allows with the empty pages the
// service may send (AdversarialFakeEnv). Any other backend must fall in
// [least, most].
func wantPagedRequests(t *testing.T, env Env, c *Counter, least, service, most int, what string) {
	t.Helper()
	got := c.N()
	switch {
	case env.Fake != nil && !env.adversarial:
		if got != service {
			t.Errorf("%s cost %d requests on the service's paging, want %d", what, got, service)
		}
	case got < least || got > most:
		t.Errorf("%s cost %d requests, want %d with pages of 1,000 up to %d with pages cut at partitions and empty pages", what, got, least, most)
	}
	c.Reset()
}
