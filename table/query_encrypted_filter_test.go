package table

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/seqs"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// Query and QueryPage refuse a filter on an encrypted property before any
// request: the service holds ciphertext, so the filter would silently
// match nothing.
func TestQueryRefusesEncryptedFilterBeforeSending(t *testing.T) {
	ctx := t.Context()
	var c reqcount.Counter
	client := fake.NewTableService(nil).NewClient("Filtered", c.TableOptions())
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb, err := New[filtered](client, &Options{Encryption: &Encryption{KeyID: "k", Keys: LocalKeys{"k": bytes.Repeat([]byte{1}, 32)}}})
	if err != nil {
		t.Fatal(err)
	}
	c.Reset()
	opts := &QueryOptions{Filter: Partition("Sales").And(Prop("SSN").Eq("078-05-1120"))}
	check := func(name string, err error) {
		t.Helper()
		var ie *InputError
		if !errors.Is(err, ErrEncryptedFilter) || !errors.As(err, &ie) || ie.Field != "SSN" || c.N() != 0 {
			t.Errorf("%s: %v after %d requests, want ErrEncryptedFilter on SSN before any", name, err, c.N())
		}
	}
	_, err = tb.QueryPage(ctx, "", opts)
	check("QueryPage", err)
	_, err = seqs.Collect(tb.Query(ctx, opts))
	check("Query", err)
	// A plaintext filter still runs.
	if _, err := seqs.Collect(tb.Query(ctx, &QueryOptions{Filter: Prop("Name").Eq("Don")})); err != nil || c.N() != 1 {
		t.Fatalf("plaintext filter: %v after %d requests", err, c.N())
	}
}
