package table_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/table"
)

// TestEveryLostRaceIsErrLostRace: a guarded update beaten by another
// writer (412), Modify giving up after it (*ConflictError) and a
// transaction adding what another writer added first (409
// EntityAlreadyExists) all match errors.Is(err, table.ErrLostRace), the
// one name of a lost race, with the service's answer in the chain; a 404
// is not a race.
func TestEveryLostRaceIsErrLostRace(t *testing.T) {
	type counter struct {
		table.Meta
		N int64
	}
	ctx := t.Context()
	client := fake.NewTableService(nil).NewClient("Counters", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := table.New[counter](client, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := &counter{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
	if err := tbl.Add(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	stale := *v
	if err := tbl.Update(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, status int) {
		t.Helper()
		var re *azcore.ResponseError
		if !errors.Is(err, table.ErrLostRace) || !table.Is(err, table.ErrLostRace) || !errors.As(err, &re) || svcanswer.StatusCode(err) != status {
			t.Errorf("%s: %v; want errors.Is(err, table.ErrLostRace) with the service's %d in the chain", what, err, status)
		}
	}
	check("Update with a stale ETag", tbl.Update(ctx, &stale, nil), http.StatusPreconditionFailed)

	_, err = tbl.Modify(ctx, "p", "r", func(c *counter) error {
		cur, err := tbl.Get(ctx, "p", "r", nil)
		if err != nil {
			return err
		}
		cur.N = 7 // the other writer, between Modify's read and its write
		if err := tbl.Update(ctx, cur, nil); err != nil {
			return err
		}
		c.N++
		return nil
	}, &table.ModifyOptions{MaxAttempts: 1})
	var ce *table.ConflictError
	if !errors.As(err, &ce) {
		t.Errorf("Modify that lost its only attempt: %v; want a *table.ConflictError", err)
	}
	check("Modify that lost its only attempt", err, http.StatusPreconditionFailed)

	_, err = batch.Submit(ctx, client, []batch.Op{batch.Add(&counter{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}})}, nil)
	check("transaction adding an existing entity", err, http.StatusConflict)

	if _, err := tbl.Get(ctx, "p", "missing", nil); errors.Is(err, table.ErrLostRace) || table.Is(err, table.ErrLostRace) {
		t.Errorf("Get of a missing entity: %v counts as a lost race", err)
	}
}
