package table_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// azuriteIdleClose is how long Azurite keeps an idle connection open
// (Node's 5 s keep-alive timeout; measured: closed after 6.0 s). The real
// service keeps them longer, and tablekit's transport drops its own idle
// connections after 90 s, as net/http's does.
const azuriteIdleClose = 7 * time.Second

// A connection the service closed while it sat idle in the pool is not
// written to: the next read opens another and costs one request, no
// failed attempt and no wait for the SDK's retry.
func TestTransportSkipsAConnectionTheServiceClosed(t *testing.T) {
	cs := testenv.ConnectionString(t)
	t.Parallel()
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	svc, err := aztables.NewServiceClientFromConnectionString(cs, table.ClientOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	name := testenv.UniqueName("idleclose")
	if _, err := svc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	rows, err := table.New[firm](svc.NewClient(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		t.Helper()
		_, err := rows.Get(t.Context(), "p", "r", nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 404 {
			t.Fatalf("Get of a missing entity: %v, want a 404 ResponseError", err)
		}
	}
	get()
	time.Sleep(azuriteIdleClose)
	l.Reset()
	get()
	if n, r := l.Total(), l.Retries(); n != 1 || r != 0 {
		t.Errorf("the read after the service closed the idle connection cost %d requests (%d retries), want 1 (0)\n%s", n, r, l)
	}
}
