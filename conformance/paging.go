package conformance

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
// says what the count shows and why it is not measured under realistic
// paging. On the fake it switches the table to fake.FriendlyPaging.
// Azurite 3.37 pages so already: it ends a page only after 1,000
// entities (or $top), never at a partition boundary, and sends no empty
// page; on an account the count holds only where the service did not cut
// a page short, which the log line says.
func (env Env) friendlyPaging(t testing.TB, client *aztables.Client, why string) {
	t.Helper()
	if env.Fake == nil || env.tables == nil {
		t.Logf("%s: the request count below assumes pages of 1,000 entities (%s)", env.Name, why)
		return
	}
	name, ok := env.tables.Load(client)
	if !ok {
		t.Fatalf("conformance: friendlyPaging on a table this Env did not create")
	}
	env.Fake.SetPaging(name.(string), fake.FriendlyPaging())
	t.Logf("%s: friendly paging on this table: %s", env.Name, why)
}

// wantPagedRequests checks a request count that depends on how the
// backend pages: friendly is the count when pages end only at 1,000
// entities (Azurite), realistic the most the case allows when pages also
// end at partition boundaries and some come back empty (the fake; the
// service may). Anything outside [friendly, realistic] fails.
func wantPagedRequests(t *testing.T, c *Counter, friendly, realistic int, what string) {
	t.Helper()
	if got := c.N(); got < friendly || got > realistic {
		t.Errorf("%s cost %d requests, want %d with pages of 1,000 up to %d with pages cut at partitions and empty pages", what, got, friendly, realistic)
	}
	c.Reset()
}
