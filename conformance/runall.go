package conformance

import (
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reqcount"
)

// need names a backend function field a suite calls. A suite whose needs
// a Harness does not meet is reported as not run, with the Harness field.
type need string

// The backend fields a suite may need.
const (
	needTable         need = "NewTable"
	needQueue         need = "NewQueue"
	needContainer     need = "NewContainer"
	needQueueService  need = "QueueService"
	needSASTable      need = "SASTable"
	needAdvance       need = "Advance"
	needServiceClient need = "NewServiceClient"
)

// harnessField is the Harness field a backend field is made from.
func harnessField(n need) string {
	switch n {
	case needQueue, needQueueService:
		return "Harness.QueueService"
	case needContainer:
		return "Harness.BlobService"
	case needSASTable:
		return "Harness.TableService, AccountName, AccountKey and TableURL"
	case needAdvance:
		return "Harness.Advance"
	}
	return "Harness.TableService"
}

// suite is one of the suites RunConformanceTests runs on one backend: its
// name (the subtest's), the backend fields it calls, and how to run it.
type suite struct {
	Name  string
	Needs []need
	Run   func(t *testing.T, env backend)
}

// withService adapts a suite that takes a service-client constructor to
// one that takes a backend, using backend.NewServiceClient.
func withService(run func(t *testing.T, env backend, svc func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient)) func(t *testing.T, env backend) {
	return func(t *testing.T, env backend) {
		run(t, env, func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient {
			return env.NewServiceClient(t, c.TableOptions())
		})
	}
}

// suites lists every suite that runs on one backend, in the order
// RunConformanceTests runs them. Two more follow them there: SASBuilder
// (the account key and three endpoints) and Accounts (two accounts).
func suites() []suite {
	const (
		tbl, q, ctr, qs, sas, adv, svc = needTable, needQueue, needContainer, needQueueService, needSASTable, needAdvance, needServiceClient
	)
	return []suite{
		{"Table", []need{tbl}, runTable},
		{"Batch", []need{tbl}, runBatch},
		{"QueueAndBlob", []need{q, ctr, adv}, runQueueAndBlob},
		{"SAS", []need{sas}, runSAS},
		{"RawEntity", []need{tbl}, runRawEntity},
		{"ErrorChain", []need{tbl, q, ctr, svc}, withService(runErrorChain)},
		{"QueueFidelity", []need{q, qs, adv}, runQueueFidelity},
		{"BlobFidelity", []need{ctr, adv}, runBlobFidelity},
		{"BeingDeleted", []need{tbl, q, ctr, adv}, runBeingDeleted},
		{"Payloads", []need{tbl}, runPayloads},
		{"FilterFidelity", []need{tbl}, runFilterFidelity},
		{"Paging", []need{tbl}, runPaging},
		{"WirePath", []need{tbl, svc}, runWirePath},
	}
}

// missing returns the Harness fields that the needs call for and env
// lacks.
func (env backend) missing(needs []need) []string {
	var out []string
	for _, n := range needs {
		set := true
		switch n {
		case needTable:
			set = env.NewTable != nil
		case needQueue:
			set = env.NewQueue != nil
		case needContainer:
			set = env.NewContainer != nil
		case needQueueService:
			set = env.QueueService != nil
		case needSASTable:
			set = env.SASTable != nil
		case needAdvance:
			set = env.Advance != nil
		case needServiceClient:
			set = env.NewServiceClient != nil
		}
		if f := harnessField(n); !set && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// RunConformanceTests checks that the backend newHarness makes answers as
// the Azure Table, Queue and Blob services do, in the ways tablekit relies
// on. Each suite is a subtest named after it (go test -run
// 'TestX/^Table$' picks one) and runs on a fresh Harness: one that moved a
// backend's clock forward would change what the next one sees. A suite
// that needs a Harness field left nil is not run, and the output says so
// ("not run on <Name>: suite QueueAndBlob needs Harness.QueueService"); a
// case that needs a Capability the backend lacks says "not run on <Name>:
// <capability>: <reason>" and checks what it still can. Nothing is
// skipped in silence. Harness.Name must be set. newHarness returns a fresh
// Harness for each suite: a suite may move the backend's clock (Advance),
// which must not change what the next suite sees.
func RunConformanceTests(t *testing.T, newHarness func(t *testing.T) Harness) {
	harness := func(t *testing.T) Harness {
		h := newHarness(t)
		if h.Name == "" {
			t.Fatal("conformance: Harness.Name is empty; the output names the backend with it")
		}
		return h
	}
	for _, s := range suites() {
		t.Run(s.Name, func(t *testing.T) {
			h := harness(t)
			env := h.backend()
			if m := env.missing(s.Needs); len(m) > 0 {
				t.Logf("not run on %s: suite %s needs %s", h.Name, s.Name, strings.Join(m, ", "))
				return
			}
			s.Run(t, env)
		})
	}
	t.Run("SASBuilder", func(t *testing.T) {
		h := harness(t)
		b, m := h.sasBackend(t)
		if len(m) > 0 {
			t.Logf("not run on %s: suite SASBuilder needs %s", h.Name, strings.Join(m, ", "))
			return
		}
		b.run(t)
	})
	t.Run("Accounts", func(t *testing.T) {
		h := harness(t)
		if h.Second == nil || h.TableService == nil || h.Second.TableService == nil {
			t.Logf("not run on %s: suite Accounts needs Harness.Second, and Harness.TableService on both", h.Name)
			return
		}
		runAccounts(t, twoAccounts{Name: h.Name, Connect: [2]connectFunc{h.TableService, h.Second.TableService}})
	})
}
