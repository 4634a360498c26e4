package fake_test

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/conformance"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/integration"
)

// devKey is Azurite's public development key: the fake verifies SAS
// signatures with it, so tokens are signed the same way for both.
const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// harness is the fake as a conformance backend: a table, a queue and a
// blob service on one clock, which Advance moves forward at once, so
// time-driven cases do not sleep; a second account of two more services.
// Its tables page as the service does (the zero fake.Paging), so a request
// count a case asserts on it is the service's; with adversarial set they
// also send the empty pages the service may send (fake.Paging{EmptyPageEvery: 3}),
// to prove the loops over pages right. It lacks no capability.
func harness(name string, adversarial bool) conformance.Harness {
	// One clock for the three services: real time plus what Advance
	// added, so cases that wait for real time still work and time-driven
	// cases need not sleep.
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	paging := &fakePaging{adversarial: adversarial}
	base := paging.base()
	tables := fake.NewTableService(&fake.TableServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey, Now: now, Paging: &base})
	paging.svc = tables
	queues := fake.NewQueueService(&fake.QueueServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey, Now: now})
	blobs := fake.NewBlobService(&fake.BlobServiceOptions{AccountName: "devstoreaccount1", AccountKey: devKey, Now: now})
	second := fake.NewTableService(nil)
	return conformance.Harness{
		Name: name,
		TableService: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
			return tables.NewServiceClient(o), nil
		},
		QueueService: func(o *azqueue.ClientOptions) (*azqueue.ServiceClient, error) {
			return queues.NewServiceClient(o), nil
		},
		BlobService: func(o *azblob.ClientOptions) (*azblob.Client, error) {
			return blobs.NewClient(o), nil
		},
		AccountName: "devstoreaccount1", AccountKey: devKey,
		TableURL: tables.URL(), QueueURL: queues.URL(), BlobURL: blobs.URL(),
		TableTransport: tables, QueueTransport: queues, BlobTransport: blobs,
		PlainURL: func(u string) string { return "http://" + strings.TrimPrefix(u, "https://") },
		ClientIP: netip.MustParseAddr("127.0.0.1"),
		Advance:  func(d time.Duration) { skew.Add(int64(d)) },
		Paging:   paging,
		Second: &conformance.Harness{
			Name: name + " (second account)",
			TableService: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
				return second.NewServiceClient(o), nil
			},
		},
	}
}

// fakePaging is the fake's paging model as conformance.PagingControl.
type fakePaging struct {
	svc         *fake.TableService
	adversarial bool
}

func (p *fakePaging) base() fake.Paging {
	if p.adversarial {
		return fake.Paging{EmptyPageEvery: 3}
	}
	return fake.Paging{}
}

func (p *fakePaging) Adversarial() bool { return p.adversarial }

func (p *fakePaging) SetScanCost(table string, d time.Duration) {
	q := p.base()
	q.ScanCost = d
	p.svc.SetPaging(table, q)
}

// TestConformance runs the contract on the fake: a case that passes on
// Azurite (conformance's own test) and fails here is a bug in the fake.
func TestConformance(t *testing.T) {
	conformance.RunConformanceTests(t, func(t *testing.T) conformance.Harness { return harness("fake", false) })
}

// TestConformanceOnAdversarialPaging runs the paging-sensitive suites
// (Table, Paging) on the fake with adversarial paging: every loop over pages must follow tokens
// whatever a page holds. The other suites assert the service's request
// counts, which extra empty pages would change; they say so and stop.
func TestConformanceOnAdversarialPaging(t *testing.T) {
	conformance.RunConformanceTests(t, func(t *testing.T) conformance.Harness {
		switch suite := t.Name()[strings.LastIndex(t.Name(), "/")+1:]; suite {
		case "Table", "Paging":
		default:
			t.Skipf("suite %s runs on the service's paging only (TestConformance)", suite)
		}
		return harness("fake (adversarial paging)", true)
	})
}

// TestFilterDifferentialFakeVsAzurite runs 1,000 random filters against
// the fake and Azurite side by side.
func TestFilterDifferentialFakeVsAzurite(t *testing.T) {
	integration.RunFilterDifferential(t, integration.FakeEnv(), integration.AzuriteEnv(t), 1000, 2026)
}
