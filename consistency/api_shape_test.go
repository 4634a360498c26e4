package consistency_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apiShapeExceptions are the ctx methods whose signature a type the user
// implements fixes, so they keep it and take no options:
//   - Mover.Handle is a Handler, the worker's callback type;
//   - TableTarget.Put and BlobTarget.Put implement Target, the Mover's port
//     (see Target's comment).
var apiShapeExceptions = map[string]bool{
	"consistency.Mover.Handle":    true,
	"consistency.TableTarget.Put": true,
	"consistency.BlobTarget.Put":  true,
}

// TestEveryContextMethodEndsWithOptions checks the Azure SDK shape in
// consistency and its subpackages: an exported function, or a method of an
// exported type, that takes a context first ends with a *XxxOptions
// parameter (nil = defaults), so options can grow without breaking callers.
func TestEveryContextMethodEndsWithOptions(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		n, bad := checkAPIShape(t, path)
		checked += n
		for _, b := range bad {
			t.Error(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 22 when written (Worker.Run, Sender.Send, Mover.Request, the steps,
	// the poison queue's verbs, Role.Run, ...): far fewer means the walk
	// missed files.
	if checked < 20 {
		t.Fatalf("checked %d context functions; the parse missed most of them", checked)
	}
}

// TestAPIShapeCheckerCanFail runs the checker on a package that breaks the
// rule, so a checker that lets everything pass cannot go unnoticed.
func TestAPIShapeCheckerCanFail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bad")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package bad

import "context"

type Client struct{}
type GetOptions struct{}

func (c *Client) Get(ctx context.Context, o *GetOptions) error { return nil }
func (c *Client) Put(ctx context.Context, v int) error         { return nil }
func Send(ctx context.Context, o GetOptions) error             { return nil }
func (c *Client) unexported(ctx context.Context) error         { return nil }
`
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	n, bad := checkAPIShape(t, dir)
	if n != 3 || len(bad) != 2 || !strings.Contains(bad[0]+bad[1], "bad.Client.Put") || !strings.Contains(bad[0]+bad[1], "bad.Send") {
		t.Fatalf("checked %d, reported %q; want 3 checked and Client.Put, Send reported", n, bad)
	}
}

// checkAPIShape parses the non-test files of dir and returns how many
// exported ctx functions it checked and one line per offender.
func checkAPIShape(t *testing.T, dir string) (int, []string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	var bad []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() || fd.Type.Params.NumFields() == 0 {
				continue
			}
			name := f.Name.Name + "." + fd.Name.Name
			if fd.Recv != nil {
				recv := shapeTypeName(fd.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = f.Name.Name + "." + recv + "." + fd.Name.Name
			}
			if sel, ok := fd.Type.Params.List[0].Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Context" {
				continue
			}
			checked++
			last := fd.Type.Params.List[len(fd.Type.Params.List)-1].Type
			star, ok := last.(*ast.StarExpr)
			if (!ok || !strings.HasSuffix(shapeTypeName(star.X), "Options")) && !apiShapeExceptions[name] {
				bad = append(bad, fset.Position(fd.Pos()).String()+": "+name+" takes a context but no trailing *XxxOptions")
			}
		}
	}
	return checked, bad
}

// shapeTypeName is the name of a (possibly pointer, generic or qualified) type.
func shapeTypeName(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.StarExpr:
		return shapeTypeName(v.X)
	case *ast.IndexExpr:
		return shapeTypeName(v.X)
	case *ast.IndexListExpr:
		return shapeTypeName(v.X)
	case *ast.SelectorExpr:
		return v.Sel.Name
	case *ast.Ident:
		return v.Name
	}
	return ""
}
