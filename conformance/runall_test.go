package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// TestSuiteNeedsAreComplete checks, from the source, that each suite's
// Needs names every Env field its RunXxx function calls, directly or
// through the package's functions it refers to: a need left out would
// make RunAll call a nil field of a backend that does not set it, and
// panic instead of reporting the suite as not run.
func TestSuiteNeedsAreComplete(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}     // package-level functions
	methods := map[string][]*ast.FuncDecl{} // methods, by name alone
	for _, f := range files {
		// runall.go reads every field to report what is missing, and
		// harness.go sets them.
		if strings.HasSuffix(f, "_test.go") || f == "runall.go" || f == "harness.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			switch {
			case !ok || fd.Body == nil:
			case fd.Recv == nil:
				funcs[fd.Name.Name] = fd
			default:
				methods[fd.Name.Name] = append(methods[fd.Name.Name], fd)
			}
		}
	}
	fields := map[string]need{}
	for _, n := range []need{needTable, needQueue, needContainer, needQueueService, needSASTable, needAdvance, needServiceClient} {
		fields[string(n)] = n
	}
	// uses follows root through the functions it names and the methods it
	// selects (x.m, matched by name: a method of another type with the
	// same name only makes the check stricter).
	uses := func(root string) map[need]bool {
		got := map[need]bool{}
		seen := map[*ast.FuncDecl]bool{}
		queue := []*ast.FuncDecl{funcs[root]}
		for len(queue) > 0 {
			fd := queue[0]
			queue = queue[1:]
			if seen[fd] {
				continue
			}
			seen[fd] = true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if need, ok := fields[n.Sel.Name]; ok {
						got[need] = true
					}
					queue = append(queue, methods[n.Sel.Name]...)
					ast.Inspect(n.X, func(n ast.Node) bool {
						if id, ok := n.(*ast.Ident); ok && funcs[id.Name] != nil {
							queue = append(queue, funcs[id.Name])
						}
						return true
					})
					return false // n.Sel names a field or method, not a function
				case *ast.Ident:
					if fd := funcs[n.Name]; fd != nil {
						queue = append(queue, fd)
					}
				}
				return true
			})
		}
		// A suite that takes a service-client constructor gets it from
		// Env.NewServiceClient (withService).
		for _, p := range funcs[root].Type.Params.List {
			if len(p.Names) > 0 && p.Names[0].Name != "t" && p.Names[0].Name != "env" {
				got[needServiceClient] = true
			}
		}
		return got
	}
	suites := suites()
	if len(suites) < 10 {
		t.Fatalf("Suites lists %d suites; the analysis below would prove little", len(suites))
	}
	for _, s := range suites {
		if _, ok := funcs["run"+s.Name]; !ok {
			t.Errorf("suite %s: no function run%s", s.Name, s.Name)
			continue
		}
		used := uses("run" + s.Name)
		if len(used) == 0 {
			t.Errorf("suite %s: found no Env field its function calls; the analysis is broken", s.Name)
		}
		for need := range used {
			if !slices.Contains(s.Needs, need) {
				t.Errorf("suite %s calls Env.%s but its Needs leave it out", s.Name, need)
			}
		}
	}
	// Every runXxx that takes a backend and that no other function calls
	// (a suite's helper) is in suites.
	called := map[string]bool{}
	for _, fd := range funcs {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				called[id.Name] = true
			}
			return true
		})
	}
	for name, fd := range funcs {
		if !strings.HasPrefix(name, "run") || called[name] || len(fd.Type.Params.List) < 2 {
			continue
		}
		if id, ok := fd.Type.Params.List[1].Type.(*ast.Ident); !ok || id.Name != "backend" {
			continue // runAccounts takes two accounts
		}
		if !slices.ContainsFunc(suites, func(s suite) bool { return "run"+s.Name == name }) {
			t.Errorf("%s (%s) is not in suites, so RunConformanceTests does not run it", name, fset.Position(fd.Pos()))
		}
	}
}

// TestMissingHarnessFields: a Harness that leaves a field nil gets the
// suites that need it listed with the field, not a nil call; one that sets
// every field misses nothing.
func TestMissingHarnessFields(t *testing.T) {
	env := Harness{Name: "tables only", TableService: func(*aztables.ClientOptions) (*aztables.ServiceClient, error) { return nil, nil }}.backend()
	if m := env.missing([]need{needTable, needQueue, needQueueService, needServiceClient, needContainer}); !slices.Equal(m, []string{"Harness.QueueService", "Harness.BlobService"}) {
		t.Fatalf("missing = %q", m)
	}
	if m := env.missing([]need{needSASTable}); len(m) != 1 {
		t.Fatalf("a Harness without AccountName, AccountKey and TableURL misses %q, want the SAS table", m)
	}
	full := AccountHarness(t, "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5;EndpointSuffix=core.windows.net", nil).backend()
	for _, s := range suites() {
		if m := full.missing(s.Needs); len(m) > 0 {
			t.Errorf("AccountHarness lacks %v for suite %s", m, s.Name)
		}
	}
	if m := (Harness{}).backend().missing([]need{needQueueService, needSASTable, needAdvance, needContainer}); len(m) != 4 {
		t.Fatalf("an empty Harness misses %q, want four fields", m)
	}
	if _, m := (Harness{Name: "x"}).sasBackend(t); len(m) != 8 {
		t.Fatalf("an empty Harness gives the SAS builder %q, want eight missing fields", m)
	}
}

// TestAccountHarnessEndpoints: a portal connection string names no
// endpoints, and the harness derives them as the SDK does; an emulator's
// names them, on loopback.
func TestAccountHarnessEndpoints(t *testing.T) {
	h := AccountHarness(t, "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net", nil)
	if h.TableURL != "https://acct.table.core.windows.net/" || h.QueueURL != "https://acct.queue.core.windows.net/" || h.BlobURL != "https://acct.blob.core.windows.net/" {
		t.Fatalf("endpoints %q %q %q", h.TableURL, h.QueueURL, h.BlobURL)
	}
	if h.PlainURL != nil || h.ClientIP.IsValid() || h.PolicyDelay != 30*time.Second || h.Name != "acct" {
		t.Fatalf("a real account: %+v", h)
	}
	e := AccountHarness(t, "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1", AzuriteLacks())
	if e.TableURL != "http://127.0.0.1:10002/devstoreaccount1/" || e.PlainURL == nil || !e.ClientIP.IsLoopback() || e.PolicyDelay != 0 || e.Supports(CapTableBeingDeleted) || !e.Supports(CapSASProtocol) {
		t.Fatalf("an emulator: %+v", e)
	}
}
