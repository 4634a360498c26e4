package batch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// TestSizeCountsKeysAtTheirWorstCaseAndNoMore: an operation's keys are
// counted at what the costliest key character takes: in the body once, and
// in an update's URL as a quote doubled and percent-escaped (six bytes). So
// for 100 updates whose 200-character keys are all quotes, sent by
// tablekit's own $batch body (the one path that can send them), the
// estimate covers the request and stays within the same 100 KiB of it that
// TestSizeBoundsWhatIsSent allows the SDK's path: an estimate that counted
// keys at more than their worst case would refuse transactions that fit.
func TestSizeCountsKeysAtTheirWorstCaseAndNoMore(t *testing.T) {
	rec := &bodySizes{}
	_, c := newFake(t, &aztables.ClientOptions{ClientOptions: azcore.ClientOptions{PerCallPolicies: []policy.Policy{rec}}})
	quotes := strings.Repeat("'", 200)
	tx := batch.NewTransaction(nil)
	for i := range batch.MaxOperations {
		op := batch.Update(&Event{Meta: table.Meta{PartitionKey: quotes, RowKey: fmt.Sprintf("%s%03d", quotes, i)}}, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)
		if err := tx.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = tx.Submit(t.Context(), c, nil) // the entities do not exist: the size sent is what counts
	if len(rec.sizes) != 1 {
		t.Fatalf("%d requests, want 1", len(rec.sizes))
	}
	sent := rec.sizes[0]
	if tx.Size() < sent {
		t.Fatalf("estimate %d below the %d bytes sent", tx.Size(), sent)
	}
	if tx.Size() > sent+100*1024 {
		t.Errorf("estimate %d for %d bytes sent: %d over, more than 100 KiB", tx.Size(), sent, tx.Size()-sent)
	}
}
