package tune_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
	"github.com/tablekit/tablekit/tune"
)

// On Azurite (path-style URLs, the account's name first in the path) a
// transaction draws on its partition's budget in a Limiter, as single
// writes do, and an Adaptive, which Azurite never throttles, passes every
// request at its ceilings.
func TestLimiterAndAdaptiveOnAzurite(t *testing.T) {
	cs := testenv.ConnectionString(t)
	c := &clock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	lim := tune.NewLimiter(&tune.LimiterOptions{PerPartition: 10, PerAccount: 1000, Now: c.now, Sleep: c.sleep})
	ad := tune.NewAdaptive(&tune.AdaptiveOptions{Now: c.now, Sleep: c.sleep})
	opts := &aztables.ClientOptions{}
	opts.PerCallPolicies = []policy.Policy{lim}
	opts.PerRetryPolicies = []policy.Policy{ad}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName("limiter")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	client := svc.NewClient(name)
	tb, _ := table.New[row](client, nil)
	for i := range 10 {
		if err := tb.Add(t.Context(), &row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.slept = 0
	var ops []batch.Op
	for i := 10; i < 20; i++ {
		ops = append(ops, batch.Add(&row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%02d", i)}}))
	}
	if _, err := batch.Submit(t.Context(), client, ops, nil); err != nil {
		t.Fatal(err)
	}
	if c.slept < 900*time.Millisecond || c.slept > 1100*time.Millisecond {
		t.Fatalf("a transaction of 10 after 10 single writes on a partition at 10/s waited %v, want about 1 s", c.slept)
	}
	got, err := seqs.Collect(tb.Query(t.Context(), &table.QueryOptions{Filter: table.Partition("p")}))
	if err != nil || len(got) != 20 {
		t.Fatalf("query: %d rows, %v", len(got), err)
	}
	if r := ad.Rate(name, "p"); r != tune.PartitionTarget {
		t.Fatalf("Adaptive's partition rate %v on a service that never throttled, want the ceiling", r)
	}
	if r := ad.Rate(name, ""); r != tune.AccountTarget {
		t.Fatalf("Adaptive's account rate %v on a service that never throttled, want the ceiling", r)
	}
}
