package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunPeriods runs RollingTables.Precreate: the next periods' tables made
// ahead of their first write (one list, one create per missing period),
// nothing sent for a bad k, and a name still being deleted refused with a
// typed error that keeps the service's answer.
func RunPeriods(t *testing.T, env Env, newService func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient) {
	ctx := t.Context()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }

	t.Run("precreate makes the current and the next k periods, once", func(t *testing.T) {
		c := &reqcount.Counter{}
		svc := newService(t, c)
		prefix := periodTables(t, svc, now, 5)
		r, err := patterns.NewRollingTables[Claim](svc, prefix, keys.Daily, &patterns.RollingTablesOptions{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		c.Reset()
		names, err := r.Precreate(ctx, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1+4, "listing and creating four tables")
		for i, n := range names {
			want, _ := keys.PeriodTable(prefix, keys.Daily, now.AddDate(0, 0, i), 0)
			if n != want {
				t.Fatalf("table %d: %s, want %s", i, n, want)
			}
			// A missing row of an existing table is 404 ResourceNotFound, not TableNotFound.
			if _, err := svc.NewClient(n).GetEntity(ctx, "none", "none", nil); !table.Is(err, table.ErrNotFound) || table.Is(err, table.ErrTableNotFound) {
				t.Fatalf("%s not created: %v", n, err)
			}
		}
		if len(names) != 4 {
			t.Fatalf("names: %q", names)
		}
		// A second run (another process, a cron rerun) finds them: one list.
		r2, _ := patterns.NewRollingTables[Claim](svc, prefix, keys.Daily, &patterns.RollingTablesOptions{Now: clock})
		c.Reset()
		if again, err := r2.Precreate(ctx, 3, nil); err != nil || strings.Join(again, ",") != strings.Join(names, ",") {
			t.Fatalf("rerun: %q %v", again, err)
		}
		wantRequests(t, c, 1, "a rerun with every table there")
		// The first write of a precreated period pays no Create Table.
		c.Reset()
		if err := r2.Add(ctx, now.AddDate(0, 0, 2), &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: "ahead"}}, nil); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "the first write of a precreated period")
	})

	t.Run("a bad k: typed error, zero requests", func(t *testing.T) {
		c := &reqcount.Counter{}
		svc := newService(t, c)
		r, err := patterns.NewRollingTables[Claim](svc, "Never", keys.Daily, &patterns.RollingTablesOptions{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{-1, 367} {
			_, err := r.Precreate(ctx, k, nil)
			var ie *table.InputError
			if !errors.As(err, &ie) || !errors.Is(err, table.ErrValueOutOfRange) || ie.Field != "k" {
				t.Fatalf("k=%d: %v", k, err)
			}
		}
		wantRequests(t, c, 0, "refusing a bad k")
	})

	t.Run("a period whose name is being deleted is refused", func(t *testing.T) {
		c := &reqcount.Counter{}
		svc := newService(t, c)
		prefix := periodTables(t, svc, now, 3)
		r, err := patterns.NewRollingTables[Claim](svc, prefix, keys.Daily, &patterns.RollingTablesOptions{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Precreate(ctx, 2, nil); err != nil {
			t.Fatal(err)
		}
		// Tomorrow's table is dropped by hand (or by an Expire with a wrong clock).
		tomorrow, _ := keys.PeriodTable(prefix, keys.Daily, now.AddDate(0, 0, 1), 0)
		if _, err := svc.DeleteTable(ctx, tomorrow, nil); err != nil {
			t.Fatal(err)
		}
		r2, _ := patterns.NewRollingTables[Claim](svc, prefix, keys.Daily, &patterns.RollingTablesOptions{Now: clock})
		names, err := r2.Precreate(ctx, 2, nil)
		if !env.Has(t, CapTableBeingDeleted) {
			// Azurite frees the name at once, so the table is simply made again.
			if err != nil || len(names) != 3 || names[1] != tomorrow {
				t.Fatalf("azurite: %q %v", names, err)
			}
			return
		}
		var se *table.ServiceError
		if !errors.As(err, &se) || se.Table != tomorrow || !strings.Contains(err.Error(), now.AddDate(0, 0, 1).Truncate(24*time.Hour).Format(time.RFC3339)) || !strings.Contains(err.Error(), "still being deleted") {
			t.Fatalf("want the refusal of %s's period naming its start, got %v", tomorrow, err)
		}
		if !errors.Is(err, table.ErrTableBeingDeleted) {
			t.Fatalf("errors.Is(err, table.ErrTableBeingDeleted) is false: %v", err)
		}
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.ErrorCode != "TableBeingDeleted" {
			t.Fatalf("the service's answer is not in the chain: %v", err)
		}
		if len(names) != 1 {
			t.Fatalf("today's table should be returned before the refusal: %q", names)
		}
		// After the window the name is free and Precreate completes.
		env.Advance(beingDeletedWindow + time.Second)
		if names, err := r2.Precreate(ctx, 2, nil); err != nil || len(names) != 3 || names[1] != tomorrow {
			t.Fatalf("after the window: %q %v", names, err)
		}
	})
}

// periodTables returns a fresh daily prefix and drops its tables from now
// through days ahead at the end of the test.
func periodTables(t *testing.T, svc *aztables.ServiceClient, now time.Time, days int) string {
	prefix := "Periods" + strings.ToUpper(testenv.UniqueName("x")[1:7])
	t.Cleanup(func() {
		for d := 0; d <= days; d++ {
			for g := 0; g < 2; g++ {
				n, _ := keys.PeriodTable(prefix, keys.Daily, now.AddDate(0, 0, d), g)
				_, _ = svc.DeleteTable(context.Background(), n, nil)
			}
		}
	})
	return prefix
}
