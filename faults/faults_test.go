package faults_test

import (
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/table"
)

type row struct {
	table.Meta
	N int
}

// TestLostResponsesAreWrites: an upsert whose response was lost happened;
// retrying it converges; the counts add up and the seed is deterministic.
func TestLostResponsesAreWrites(t *testing.T) {
	run := func() (faults.Stats, int) {
		svc := fake.NewTableService(nil)
		admin := svc.NewClient("rows", nil)
		_, _ = admin.CreateTable(t.Context(), nil)
		inj := faults.New(7, &faults.Options{Fraction: 0.3})
		opts := &aztables.ClientOptions{}
		opts.PerRetryPolicies = append(opts.PerRetryPolicies, inj)
		opts.Retry.MaxRetries = -1 // see every fault
		tb, _ := table.New[row](svc.NewClient("rows", opts), nil)
		for i := 0; i < 200; i++ {
			v := &row{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprint(i)}, N: i}
			for tb.Upsert(t.Context(), v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) != nil {
			}
		}
		return inj.Stats(), svc.Len("rows")
	}
	s1, n1 := run()
	s2, n2 := run()
	if n1 != 200 || n2 != 200 {
		t.Fatalf("rows after retries: %d, %d", n1, n2)
	}
	if s1 != s2 {
		t.Fatalf("same seed, different faults: %+v vs %+v", s1, s2)
	}
	if s1.Before == 0 || s1.After == 0 || s1.Status == 0 || s1.Requests != 200+s1.Before+s1.After+s1.Status {
		t.Fatalf("stats %+v", s1)
	}
}
