package integration

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// failSwitch fails every request with 403 while on (a status the SDK does
// not retry), so an operation meets a service error at its first request,
// whichever backend serves it.
type failSwitch struct {
	on  atomic.Bool
	inj *faults.Injector
}

func newFailSwitch() *failSwitch {
	return &failSwitch{inj: faults.New(1, &faults.Options{Fraction: 1, Kinds: []faults.Kind{faults.Status}, Statuses: []int{http.StatusForbidden}})}
}

func (f *failSwitch) Do(req *policy.Request) (*http.Response, error) {
	if f.on.Load() {
		return f.inj.Do(req)
	}
	return req.Next()
}

// internalNames are the names of the patterns package's unexported types
// as an error or a span would carry them as an operation or a type
// ("IntraPartitionIndex.Put", "remoteIndexEntities("): each camel-case
// unexported type name, as declared and capitalized, followed by "." or
// "(". Read from the package's source, so a type added later is covered.
func internalNames(t *testing.T) []string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "patterns")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				n := s.(*ast.TypeSpec).Name.Name
				if ast.IsExported(n) || strings.IndexFunc(n, unicode.IsUpper) < 0 {
					continue
				}
				c := strings.ToUpper(n[:1]) + n[1:]
				out = append(out, n+".", n+"(", c+".", c+"(")
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no unexported types found in %s", dir)
	}
	return out
}

// RunModelErrorNames drives every method of an entity model that declares
// every index kind (Copies, Lists, CrossCopies, RemoteLists in a table and
// in blobs) into a bad input and into a service error, and checks that
// each error names the method called, as its operation (an
// *table.InputError's Op) and at the start of its text, and that no error
// text names one of the package's unexported types.
func RunModelErrorNames(t *testing.T, env Env) {
	ctx := t.Context()
	fail := newFailSwitch()
	c := &reqcount.Counter{Faults: fail}
	emps := tableOf(table.New[DirEmp](env.NewTable(t, c), &table.Options{Name: "Employees"}))
	copies := tableOf(table.New[table.Entity](env.NewTable(t, c), nil))
	lists := tableOf(table.New[table.Entity](env.NewTable(t, c), nil))
	bc, container := env.NewContainer(t, c)
	q := env.NewQueue(t, c)
	last := func(e *DirEmp) string { return e.LastName }
	m, err := patterns.OpenModel(ctx, emps, &patterns.ModelOptions[DirEmp]{
		Name: "staff", Primary: "empid_", Queue: q, PublishDelay: time.Second,
		Copies: []patterns.IndexDef[DirEmp]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return e.Email }},
			{Name: "first", Prefix: "first_", Value: func(e *DirEmp) string { return e.FirstName }},
		},
		Lists: []patterns.ListDef[DirEmp]{{Name: "lastname", Prefix: "lastname_", Value: last}},
		CrossCopies: []patterns.IndexDef[DirEmp]{{Name: "email-all", Table: copies,
			PartitionKey: func(e *DirEmp) string { return "email" }, Value: func(e *DirEmp) string { return e.Email }}},
		RemoteLists: []patterns.ListDef[DirEmp]{
			{Name: "lastname-all", Value: last, Table: lists, Partition: "lastnames", Prefix: "ln_"},
			{Name: "lastname-blobs", Value: last, Blobs: bc, Container: container, Prefix: "ln/"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000001"}, FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com", Salary: 1}
	if err := m.Add(ctx, stored, nil); err != nil {
		t.Fatal(err)
	}
	forbidden := internalNames(t)
	emp := func(id, email string) *DirEmp {
		return &DirEmp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, FirstName: "F", LastName: "L", Email: email}
	}
	// A value no RowKey may hold: each index key it makes is refused.
	const bad = "a/b"
	// A value too long for any key.
	long := strings.Repeat("x", 2000)
	msg := func(payload string) *consistency.Message {
		return &consistency.Message{Type: m.MessageType(), Key: "k", Payload: json.RawMessage(payload)}
	}
	row := `{"rows":[{"pk":"Sales","rk":"empid_000001"}]}`
	first := func(seq func(func(*DirEmp, error) bool)) error {
		for _, err := range seq {
			if err != nil {
				return err
			}
		}
		return nil
	}
	load := func(vs ...*DirEmp) error {
		sum, err := m.Load(ctx, func(yield func(*DirEmp) bool) {
			for _, v := range vs {
				if !yield(v) {
					return
				}
			}
		}, nil)
		for _, f := range sum.Failures {
			if f.Err == nil {
				continue
			}
			if err == nil {
				return f.Err
			}
			err = errors.Join(err, f.Err)
		}
		return err
	}
	type call struct {
		op, what string
		do       func(context.Context) error
	}
	cases := []struct {
		call
		service bool // run with every request failing
	}{
		{call{"Model.Add", "a copy's key refused", func(ctx context.Context) error { return m.Add(ctx, emp("000002", bad), nil) }}, false},
		{call{"Model.Add", "the service failing", func(ctx context.Context) error { return m.Add(ctx, emp("000003", "x@contoso.com"), nil) }}, true},
		{call{"Model.Update", "a copy's key refused", func(ctx context.Context) error {
			v := *stored
			v.Email = bad
			return m.Update(ctx, &v, nil)
		}}, false},
		{call{"Model.Update", "the service failing", func(ctx context.Context) error { v := *stored; return m.Update(ctx, &v, nil) }}, true},
		{call{"Model.Upsert", "a copy's key refused", func(ctx context.Context) error { return m.Upsert(ctx, emp("000004", bad), nil) }}, false},
		{call{"Model.Upsert", "the service failing", func(ctx context.Context) error { return m.Upsert(ctx, emp("000004", "y@contoso.com"), nil) }}, true},
		{call{"Model.Modify", "a copy's key refused", func(ctx context.Context) error {
			_, err := m.Modify(ctx, "Sales", "empid_000001", func(e *DirEmp) error { e.Email = bad; return nil }, nil)
			return err
		}}, false},
		{call{"Model.Modify", "the service failing", func(ctx context.Context) error {
			_, err := m.Modify(ctx, "Sales", "empid_000001", func(e *DirEmp) error { return nil }, nil)
			return err
		}}, true},
		{call{"Model.Delete", "a key refused", func(ctx context.Context) error { return m.Delete(ctx, bad, "empid_000001", nil) }}, false},
		{call{"Model.Delete", "the service failing", func(ctx context.Context) error { return m.Delete(ctx, "Sales", "empid_000001", nil) }}, true},
		{call{"Model.Get", "a RowKey outside the primaries", func(ctx context.Context) error { _, err := m.Get(ctx, "Sales", "email_x", nil); return err }}, false},
		{call{"Model.Get", "the service failing", func(ctx context.Context) error { _, err := m.Get(ctx, "Sales", "empid_000001", nil); return err }}, true},
		{call{"Model.Load", "a copy's key refused", func(ctx context.Context) error { return load(emp("000005", bad)) }}, false},
		{call{"Model.Load", "the service failing", func(ctx context.Context) error { return load(emp("000006", "z@contoso.com")) }}, true},
		{call{"Model.Lookup", "a copy's key refused", func(ctx context.Context) error { _, err := m.Lookup(ctx, "email", "Sales", bad, nil); return err }}, false},
		{call{"Model.Lookup", "a cross copy's value refused", func(ctx context.Context) error { _, err := m.Lookup(ctx, "email-all", "email", "", nil); return err }}, false},
		{call{"Model.Lookup", "a cross copy not found", func(ctx context.Context) error {
			_, err := m.Lookup(ctx, "email-all", "email", "nobody@contoso.com", nil)
			return err
		}}, false},
		{call{"Model.Lookup", "the service failing", func(ctx context.Context) error {
			_, err := m.Lookup(ctx, "email", "Sales", "donh@contoso.com", nil)
			return err
		}}, true},
		{call{"Model.Lookup", "the service failing on a cross copy", func(ctx context.Context) error {
			_, err := m.Lookup(ctx, "email-all", "email", "donh@contoso.com", nil)
			return err
		}}, true},
		{call{"Model.Find", "a partition refused", func(ctx context.Context) error { return first(m.Find(ctx, "first", bad, "Don", nil)) }}, false},
		{call{"Model.Find", "the service failing", func(ctx context.Context) error { return first(m.Find(ctx, "first", "Sales", "Don", nil)) }}, true},
		{call{"Model.Range", "a partition refused", func(ctx context.Context) error { return first(m.Range(ctx, "first", bad, "A", "Z", nil)) }}, false},
		{call{"Model.Range", "the service failing", func(ctx context.Context) error { return first(m.Range(ctx, "first", "Sales", "A", "Z", nil)) }}, true},
		{call{"Model.Prefix", "a partition refused", func(ctx context.Context) error { return first(m.Prefix(ctx, "first", bad, "D", nil)) }}, false},
		{call{"Model.Prefix", "the service failing", func(ctx context.Context) error { return first(m.Prefix(ctx, "first", "Sales", "D", nil)) }}, true},
		{call{"Model.IDs", "a list's value refused", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname", bad, "Hall", nil); return err }}, false},
		{call{"Model.IDs", "a remote list's value refused", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname-all", "", long, nil); return err }}, false},
		{call{"Model.IDs", "a blob list's value refused", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname-blobs", "", long, nil); return err }}, false},
		{call{"Model.IDs", "the service failing", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname", "Sales", "Hall", nil); return err }}, true},
		{call{"Model.IDs", "the service failing on a remote list", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname-all", "", "Hall", nil); return err }}, true},
		{call{"Model.IDs", "the service failing on a blob list", func(ctx context.Context) error { _, err := m.IDs(ctx, "lastname-blobs", "", "Hall", nil); return err }}, true},
		{call{"Model.LookupEntities", "a list's value refused", func(ctx context.Context) error {
			_, err := m.LookupEntities(ctx, "lastname", bad, "Hall", nil)
			return err
		}}, false},
		{call{"Model.LookupEntities", "a remote list's value refused", func(ctx context.Context) error {
			_, err := m.LookupEntities(ctx, "lastname-all", "", long, nil)
			return err
		}}, false},
		{call{"Model.LookupEntities", "the service failing on a blob list", func(ctx context.Context) error {
			_, err := m.LookupEntities(ctx, "lastname-blobs", "", "Hall", nil)
			return err
		}}, true},
		{call{"Model.LookupEntities", "the service failing", func(ctx context.Context) error {
			_, err := m.LookupEntities(ctx, "lastname", "Sales", "Hall", nil)
			return err
		}}, true},
		{call{"Model.Verify", "a partition refused", func(ctx context.Context) error {
			_, err := m.Verify(ctx, &patterns.VerifyOptions{Partition: bad})
			return err
		}}, false},
		{call{"Model.Verify", "the service failing", func(ctx context.Context) error { _, err := m.Verify(ctx, nil); return err }}, true},
		{call{"Model.Repair", "a partition refused", func(ctx context.Context) error {
			_, err := m.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: bad}})
			return err
		}}, false},
		{call{"Model.Repair", "the service failing", func(ctx context.Context) error { _, err := m.Repair(ctx, nil); return err }}, true},
		{call{"Model.Build", "an index not declared", func(ctx context.Context) error { return m.Build(ctx, "nosuch", nil) }}, false},
		{call{"Model.Build", "the service failing", func(ctx context.Context) error { return m.Build(ctx, "email", nil) }}, true},
		{call{"Model.Drop", "an index not declared", func(ctx context.Context) error { return m.Drop(ctx, "nosuch", nil) }}, false},
		{call{"Model.Drop", "the service failing", func(ctx context.Context) error { return m.Drop(ctx, "email", nil) }}, true},
		{call{"Model.Pause", "the service failing", func(ctx context.Context) error { return m.Pause(ctx, "email", nil) }}, true},
		{call{"Model.Resume", "the service failing", func(ctx context.Context) error { return m.Resume(ctx, "email", nil) }}, true},
		{call{"Model.IndexStatus", "the service failing", func(ctx context.Context) error { _, err := m.IndexStatus(ctx, "email", nil); return err }}, true},
		{call{"Model.Process", "another type's message", func(ctx context.Context) error {
			return m.Process(ctx, &consistency.Message{Type: "other.v1", Key: "k", Payload: json.RawMessage(row)})
		}}, false},
		{call{"Model.Process", "the service failing", func(ctx context.Context) error { return m.Process(ctx, msg(row)) }}, true},
		{call{"Model.ProcessBatch", "the service failing", func(ctx context.Context) error {
			return errors.Join(m.ProcessBatch(ctx, []*consistency.Message{msg(row), msg(row)})...)
		}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.op+": "+tc.what, func(t *testing.T) {
			fail.on.Store(tc.service)
			defer fail.on.Store(false)
			err := tc.do(ctx)
			if err == nil {
				t.Fatalf("%s: no error", tc.op)
			}
			text := err.Error()
			var ie *table.InputError
			if errors.As(err, &ie) && ie.Op != tc.op {
				t.Errorf("the input error's Op is %q, want %q (the method called): %v", ie.Op, tc.op, err)
			}
			for _, line := range strings.Split(text, "\n") {
				if !namesOp(line, "patterns: "+tc.op) && !namesOp(line, "table: "+tc.op) {
					t.Errorf("the error does not start by naming %s, the method called: %s", tc.op, line)
				}
			}
			for _, n := range forbidden {
				if strings.Contains(text, n) {
					t.Errorf("the error names %q, which no user can call: %s", n, text)
				}
			}
		})
	}
}

// namesOp reports whether line starts with prefix (a package and an
// operation) and then the operation's end: ".", " ", ":" or "(".
func namesOp(line, prefix string) bool {
	return strings.HasPrefix(line, prefix) && len(line) > len(prefix) && strings.IndexByte(". :(", line[len(prefix)]) >= 0
}
