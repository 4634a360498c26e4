package patterns

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// apiShapeExceptions are the ctx methods that keep a fixed signature:
// Handle is a consistency.Handler, whose signature the worker defines.
// RollingTables.TableFor and Expire belong to another change.
var apiShapeExceptions = map[string]bool{
	"InterPartitionIndex.Handle":   true,
	"EventualIndexEntities.Handle": true,
	"RollingTables.TableFor":       true,
	"RollingTables.Expire":         true,
}

// TestEveryContextMethodEndsWithOptions parses the package and checks the
// Azure SDK shape: an exported function or method of an exported type that
// takes a context first ends with a *XxxOptions parameter (nil = defaults),
// so that options can grow without breaking callers.
func TestEveryContextMethodEndsWithOptions(t *testing.T) {
	fset := token.NewFileSet()
	//lint:ignore SA1019 the package has no build-tagged files, which is all ParseDir misses
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() || fd.Type.Params.NumFields() == 0 {
					continue
				}
				name := fd.Name.Name
				if fd.Recv != nil {
					recv := typeName(fd.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name = recv + "." + name
				}
				if sel, ok := fd.Type.Params.List[0].Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Context" {
					continue
				}
				checked++
				last := fd.Type.Params.List[len(fd.Type.Params.List)-1].Type
				star, ok := last.(*ast.StarExpr)
				if (!ok || !strings.HasSuffix(typeName(star.X), "Options")) && !apiShapeExceptions[name] {
					t.Errorf("%s: %s takes a context but no trailing *XxxOptions", fset.Position(fd.Pos()), name)
				}
			}
		}
	}
	if checked < 70 {
		t.Fatalf("checked %d context methods; the parse missed most of the package", checked)
	}
}

// typeName is the name of a (possibly pointer, generic or qualified) type.
func typeName(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.StarExpr:
		return typeName(v.X)
	case *ast.IndexExpr:
		return typeName(v.X)
	case *ast.IndexListExpr:
		return typeName(v.X)
	case *ast.SelectorExpr:
		return v.Sel.Name
	case *ast.Ident:
		return v.Name
	}
	return ""
}
