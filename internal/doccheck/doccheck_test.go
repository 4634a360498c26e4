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

// libraryPackages lists every directory of the module that holds a
// non-test Go file, except examples (programs whose comments are their
// own) and tools (build tooling), so that a new package is checked the day
// it is added instead of when someone remembers to list it.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case rel == "examples", rel == "tools", strings.HasPrefix(d.Name(), "."), d.Name() == "node_modules", d.Name() == "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(rel))
			if len(dirs) == 0 || dirs[len(dirs)-1] != dir {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 15 {
		t.Fatalf("found %d packages (%v); the walk missed most of the module", len(dirs), dirs)
	}
	return dirs
}

func TestExportedIdentifiersHaveDocComments(t *testing.T) {
	fset := token.NewFileSet()
	var missing []string
	for _, dir := range libraryPackages(t) {
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
