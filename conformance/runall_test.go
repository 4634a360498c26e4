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
		// runall.go reads every field to report what is missing.
		if strings.HasSuffix(f, "_test.go") || f == "runall.go" {
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
	fields := map[string]Need{}
	for _, n := range []Need{NeedTable, NeedQueue, NeedContainer, NeedQueueService, NeedSASTable, NeedAdvance, NeedServiceClient} {
		fields[string(n)] = n
	}
	// uses follows root through the functions it names and the methods it
	// selects (x.m, matched by name: a method of another type with the
	// same name only makes the check stricter).
	uses := func(root string) map[Need]bool {
		got := map[Need]bool{}
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
				got[NeedServiceClient] = true
			}
		}
		return got
	}
	suites := Suites()
	if len(suites) < 30 {
		t.Fatalf("Suites lists %d suites; the analysis below would prove little", len(suites))
	}
	for _, s := range suites {
		if _, ok := funcs["Run"+s.Name]; !ok {
			t.Errorf("suite %s: no function Run%s", s.Name, s.Name)
			continue
		}
		used := uses("Run" + s.Name)
		if len(used) == 0 {
			t.Errorf("suite %s: found no Env field its function calls; the analysis is broken", s.Name)
		}
		for need := range used {
			if !slices.Contains(s.Needs, need) {
				t.Errorf("suite %s calls Env.%s but its Needs leave it out", s.Name, need)
			}
		}
	}
	// Every exported RunXxx that takes one Env is in Suites.
	for name, fd := range funcs {
		if !strings.HasPrefix(name, "Run") || name == "RunAll" || name == "RunFilterDifferential" || name == "RunAccounts" {
			continue
		}
		if !slices.ContainsFunc(suites, func(s Suite) bool { return "Run"+s.Name == name }) {
			t.Errorf("%s (%s) is not in Suites, so RunAll does not run it", name, fset.Position(fd.Pos()))
		}
	}
}

// TestRunAllReportsMissingFields: a backend that leaves a field nil gets
// the suites that need it listed with the field, not a nil call.
func TestRunAllReportsMissingFields(t *testing.T) {
	env := Env{Name: "tables only", NewTable: FakeEnv().NewTable}
	if m := env.missing([]Need{NeedTable, NeedQueue, NeedServiceClient}); !slices.Equal(m, []string{"Env.NewQueue", "Env.NewServiceClient"}) {
		t.Fatalf("missing = %q", m)
	}
	full := FakeEnv()
	for _, s := range Suites() {
		if m := full.missing(s.Needs); len(m) > 0 {
			t.Errorf("FakeEnv lacks %v for suite %s", m, s.Name)
		}
	}
	if m := (Env{}).missing([]Need{NeedQueueService, NeedSASTable, NeedAdvance, NeedContainer}); len(m) != 4 {
		t.Fatalf("an empty Env misses %q, want all four", m)
	}
}
