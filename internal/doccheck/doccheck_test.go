// Package doccheck checks that every exported identifier of the library's
// packages has a doc comment, so godoc never shows a bare name.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var packages = []string{"keys", "table", "batch", "consistency", "patterns", "fake", "ledger", "faults", "tune", "accounts", "cli", "cmd/tablekit", "internal/trace", "internal/redact", "conformance"}

func TestExportedIdentifiersHaveDocComments(t *testing.T) {
	fset := token.NewFileSet()
	var missing []string
	for _, dir := range packages {
		files, _ := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		hasPkgDoc := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc != nil {
				hasPkgDoc = true
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.IsExported() && d.Doc == nil && (d.Recv == nil || exportedRecv(d.Recv)) {
						missing = append(missing, fset.Position(d.Pos()).String()+" func "+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
								missing = append(missing, fset.Position(s.Pos()).String()+" type "+s.Name.Name)
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								// A constant or variable in a documented group counts as documented.
								if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
									missing = append(missing, fset.Position(n.Pos()).String()+" "+n.Name)
								}
							}
						}
					}
				}
			}
		}
		if !hasPkgDoc {
			missing = append(missing, dir+": no package doc comment")
		}
	}
	for _, m := range missing {
		t.Error("no doc comment: " + m)
	}
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	t := r.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if ix, ok := t.(*ast.IndexListExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
