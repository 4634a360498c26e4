package faults_test

import (
	"errors"
	"net"
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/table"
)

// A Timeout fault is an injected fault and a net.Error that timed out
// (os.ErrDeadlineExceeded); the SDK's policy retries it (MaxRetries 3:
// four tries), and tablekit does not retry it again.
func TestTimeoutFaultsAreRetriedOnceByTheSDK(t *testing.T) {
	svc := fake.NewTableService(nil)
	_, _ = svc.NewClient("rows", nil).CreateTable(t.Context(), nil)
	inj := faults.New(1, &faults.Options{Fraction: 1, Kinds: []faults.Kind{faults.Timeout}})
	opts := &aztables.ClientOptions{}
	opts.PerRetryPolicies = append(opts.PerRetryPolicies, inj)
	tb, _ := table.New[row](svc.NewClient("rows", opts), nil)
	_, err := tb.Get(t.Context(), "p", "r", nil)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !table.IsRetryable(err) ||
		!errors.Is(err, faults.ErrInjected) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("want a timed-out net.Error, got %v", err)
	}
	if s := inj.Stats(); s.Timeout != 4 || s.Requests != 4 || svc.Total() != 1 {
		t.Fatalf("stats %+v, %d requests reached the service (the table's creation)", s, svc.Total())
	}
}
