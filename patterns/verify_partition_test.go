package patterns_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type indexedPerson struct {
	table.Meta
	Email    string
	LastName string
}

// The model's Verify, over every index kind, refuses a Partition that no PartitionKey can
// be (a '/'), naming the option, before any request: a query for it would
// find nothing and report a partition that cannot exist as clean.
func TestEveryVerifyRefusesABadPartitionBeforeAnyRequest(t *testing.T) {
	var c reqcount.Counter
	client := fake.NewTableService(nil).NewClient("people", c.TableOptions())
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	people := tableOf(table.New[indexedPerson](client, nil))
	email := func(p *indexedPerson) string { return p.Email }
	intra, err := patterns.OpenModel(context.Background(), people, &patterns.ModelOptions[indexedPerson]{Name: "intra", Primary: "empid_", Copies: []patterns.IndexDef[indexedPerson]{{Name: "email", Prefix: "email_", Value: email}}})
	if err != nil {
		t.Fatal(err)
	}
	lists, err := patterns.OpenModel(context.Background(), tableOf(table.New[indexedPerson](client, nil)), &patterns.ModelOptions[indexedPerson]{Name: "lists", Primary: "empid_",
		Lists: []patterns.ListDef[indexedPerson]{{Name: "lname", Prefix: "lname_", Value: func(p *indexedPerson) string { return p.LastName }}}})
	if err != nil {
		t.Fatal(err)
	}
	verifiers := map[string]*patterns.Model[indexedPerson]{"copies": intra, "lists": lists}
	for name, v := range verifiers {
		c.Reset()
		r, err := v.Verify(t.Context(), &patterns.VerifyOptions{Partition: "a/b"})
		var ie *table.InputError
		if r.Primaries != 0 || !errors.As(err, &ie) || ie.Field != "Partition" || !errors.Is(err, keys.ErrForbiddenChar) {
			t.Errorf("%s: report %v, error %v; want ErrForbiddenChar on Partition", name, r, err)
		}
		if c.N() != 0 {
			t.Errorf("%s: %d requests for a bad Partition", name, c.N())
		}
	}
}
