package patterns_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// deleteBeforeBatch is another writer that, once armed, runs del just
// before the next transaction arrives: the interleaving in which a list's
// index entity is removed (its last ID gone) between a change's read and
// its guarded write.
type deleteBeforeBatch struct {
	armed atomic.Bool
	del   func() error
}

func (d *deleteBeforeBatch) Do(req *policy.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Raw().URL.Path, "$batch") && d.armed.CompareAndSwap(true, false) {
		if err := d.del(); err != nil {
			return nil, err
		}
	}
	return req.Next()
}

// A list entity deleted by another writer between an Add's read and its
// guarded write is a lost race, as a changed one is: the Add reads again
// and puts the ID in a new entity, instead of failing with the service's
// 404 (which made the model's worker retry a message whenever one handler
// emptied a list another was adding to).
func TestRemoteListAddAfterItsEntityWasDeletedReadsAgain(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		svc := fake.NewTableService(nil)
		listRaceCase(t, func(o *aztables.ClientOptions) *aztables.ServiceClient { return svc.NewServiceClient(o) })
	})
	t.Run("Azurite", func(t *testing.T) {
		cs := testenv.ConnectionString(t)
		listRaceCase(t, func(o *aztables.ClientOptions) *aztables.ServiceClient {
			c, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(o))
			if err != nil {
				t.Fatal(err)
			}
			return c
		})
	})
}

// listRaceCase runs the case on the service whose clients newClient
// builds (with the options given; nil: the defaults).
func listRaceCase(t *testing.T, newClient func(*aztables.ClientOptions) *aztables.ServiceClient) {
	ctx := t.Context()
	other := newClient(nil)
	name := testenv.UniqueName("lists")
	if _, err := other.CreateTable(ctx, name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = other.DeleteTable(context.Background(), name, nil) })
	race := &deleteBeforeBatch{}
	c := newClient(&aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{race}}})
	tbl, err := table.New[table.Entity](c.NewClient(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := patterns.NewRemoteIndexEntities(tbl, "lname", "lname_", nil)
	if err != nil {
		t.Fatal(err)
	}
	ann, bob := patterns.ID("Sales", "empid_1"), patterns.ID("Marketing", "empid_2")
	if err := lists.Add(ctx, "Model.Process", "Hall", ann); err != nil {
		t.Fatal(err)
	}
	stored, err := seqs.Collect(tbl.Query(ctx, nil))
	if err != nil || len(stored) != 1 {
		t.Fatalf("the list's entities: %d (%v), want 1", len(stored), err)
	}
	race.del = func() error {
		_, err := other.NewClient(name).DeleteEntity(ctx, stored[0].PartitionKey, stored[0].RowKey, nil)
		return err
	}
	race.armed.Store(true) // Ann's removal by another writer empties and deletes the entity
	if err := lists.Add(ctx, "Model.Process", "Hall", bob); err != nil {
		t.Fatalf("Add after the list's entity was deleted: %v", err)
	}
	if race.armed.Load() {
		t.Fatal("the other writer never ran: no transaction was sent")
	}
	if ids, err := lists.IDs(ctx, "Model.IDs", "Hall"); err != nil || !slices.Equal(ids, []string{bob}) {
		t.Fatalf("the Hall list holds %q (%v), want only %q", ids, err, bob)
	}
}
