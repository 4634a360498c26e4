package conformance

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Need names an Env function field a suite calls. A suite whose needs a
// backend does not set is reported by RunAll as not run, with the field.
type Need string

// The Env fields a suite may need.
const (
	NeedTable         Need = "NewTable"
	NeedQueue         Need = "NewQueue"
	NeedContainer     Need = "NewContainer"
	NeedQueueService  Need = "QueueService"
	NeedSASTable      Need = "SASTable"
	NeedAdvance       Need = "Advance"
	NeedServiceClient Need = "NewServiceClient"
)

// Suite is one of the suites RunAll runs: its name (the subtest's), the
// Env fields it calls, and how to run it on an Env.
type Suite struct {
	Name  string
	Needs []Need
	Run   func(t *testing.T, env Env)
}

// withService adapts a suite that takes a service-client constructor to
// one that takes an Env, using Env.NewServiceClient.
func withService(run func(t *testing.T, env Env, svc func(t *testing.T, c *Counter) *aztables.ServiceClient)) func(t *testing.T, env Env) {
	return func(t *testing.T, env Env) {
		run(t, env, func(t *testing.T, c *Counter) *aztables.ServiceClient {
			return env.NewServiceClient(t, c.TableOptions())
		})
	}
}

// Suites lists every suite that runs on one Env, in the order RunAll runs
// them. Two suites are not in it because they need more than one backend:
// RunFilterDifferential (two Envs side by side) and RunAccounts (two
// accounts).
func Suites() []Suite {
	const (
		tbl, q, ctr, qs, sas, adv, svc = NeedTable, NeedQueue, NeedContainer, NeedQueueService, NeedSASTable, NeedAdvance, NeedServiceClient
	)
	return []Suite{
		{"Table", []Need{tbl}, RunTable},
		{"Batch", []Need{tbl}, RunBatch},
		{"Patterns", []Need{tbl}, RunPatterns},
		{"QueueAndBlob", []Need{q, ctr, adv}, RunQueueAndBlob},
		{"Consistency", []Need{tbl, q}, RunConsistency},
		{"CrossPartition", []Need{tbl, q, ctr, adv}, RunCrossPartition},
		{"Shape", []Need{tbl, svc}, withService(RunShape)},
		{"SAS", []Need{sas}, RunSAS},
		{"BlobPatterns", []Need{tbl, ctr}, RunBlobPatterns},
		{"LargeBySize", []Need{tbl, ctr}, RunLargeBySize},
		{"Secrets", []Need{sas}, RunSecrets},
		{"UnderFaults", []Need{tbl, q, ctr, svc}, withService(RunUnderFaults)},
		{"RawEntity", []Need{tbl}, RunRawEntity},
		{"PoisonQueue", []Need{q}, RunPoisonQueue},
		{"Retries", []Need{tbl, q}, RunRetries},
		{"ErrorChain", []Need{tbl, q, ctr, svc}, withService(RunErrorChain)},
		{"Encryption", []Need{tbl}, RunEncryption},
		{"Worker", []Need{q}, RunWorker},
		{"Ownership", []Need{q, ctr}, RunOwnership},
		{"QueueFidelity", []Need{q, qs, adv}, RunQueueFidelity},
		{"BlobFidelity", []Need{ctr, adv}, RunBlobFidelity},
		{"BeingDeleted", []Need{tbl, q, ctr, adv}, RunBeingDeleted},
		{"Payloads", []Need{tbl}, RunPayloads},
		{"FilterFidelity", []Need{tbl}, RunFilterFidelity},
		{"LargeEntityRaces", []Need{tbl, ctr}, RunLargeEntityRaces},
		{"LargeEntityUnderFaults", []Need{tbl, ctr, svc}, withService(RunLargeEntityUnderFaults)},
		{"MoverVersions", []Need{tbl, q}, RunMoverVersions},
		{"EventStreams", []Need{tbl}, RunEventStreams},
		{"PatternDefects", []Need{tbl, q, ctr}, RunPatternDefects},
		{"WirePath", []Need{tbl, svc}, RunWirePath},
		{"Periods", []Need{adv, svc}, withService(RunPeriods)},
		{"IndexMove", []Need{tbl, q}, RunIndexMove},
		{"IDListFormat", []Need{tbl, ctr}, RunIDListFormat},
		{"Tracing", []Need{svc}, RunTracing},
		{"Compression", []Need{tbl, ctr}, RunCompression},
		{"QueryDensity", []Need{tbl}, RunQueryDensity},
		{"TypedKeys", []Need{tbl, svc}, RunTypedKeys},
		{"Paging", []Need{tbl}, RunPaging},
		{"ModelDefects", []Need{tbl, q}, RunModelDefects},
		{"Model", []Need{tbl, q}, RunModel},
	}
}

// missing returns the needs env does not set.
func (env Env) missing(needs []Need) []string {
	var out []string
	for _, n := range needs {
		set := true
		switch n {
		case NeedTable:
			set = env.NewTable != nil
		case NeedQueue:
			set = env.NewQueue != nil
		case NeedContainer:
			set = env.NewContainer != nil
		case NeedQueueService:
			set = env.QueueService != nil
		case NeedSASTable:
			set = env.SASTable != nil
		case NeedAdvance:
			set = env.Advance != nil
		case NeedServiceClient:
			set = env.NewServiceClient != nil
		}
		if !set {
			out = append(out, "Env."+string(n))
		}
	}
	return out
}

// RunAll runs every suite of Suites as a subtest named after it (go test
// -run 'TestX/^Table$' picks one), each on a fresh Env from newEnv: the
// suites assume a backend of their own, and one that moved a fake clock
// forward (Env.Advance) would change what the next one sees. A suite that
// needs an Env field the backend leaves nil is not run, and the output says
// so ("not run on <Env.Name>: suite QueueAndBlob needs Env.NewQueue"); a
// case that needs a Capability the backend lacks says "not run on
// <Env.Name>: <capability>: <reason>" and checks what it still can.
// Nothing is skipped in silence. Env.Name must be set.
func RunAll(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, s := range Suites() {
		t.Run(s.Name, func(t *testing.T) {
			env := newEnv(t)
			if env.Name == "" {
				t.Fatal("conformance: Env.Name is empty; the output names the backend with it")
			}
			if m := env.missing(s.Needs); len(m) > 0 {
				t.Logf("not run on %s: suite %s needs %s", env.Name, s.Name, strings.Join(m, ", "))
				return
			}
			s.Run(t, env)
		})
	}
}
