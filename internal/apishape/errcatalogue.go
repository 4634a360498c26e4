package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// ErrorDecls are the errors a public package declares: its exported types
// with an Error() string method, and its exported package-level variables
// named Err... (sentinels). Names are pkg.Name, the package's name rather
// than its path; directories are walked as Discover walks them.
type ErrorDecls struct {
	Types     []string
	Sentinels []string
}

// DiscoverErrors parses every public package under the module root, as
// Discover does, and returns the error types and sentinels it declares,
// each list sorted.
func DiscoverErrors(root string) (ErrorDecls, error) {
	fset := token.NewFileSet()
	var d ErrorDecls
	exported := map[string]bool{} // pkg.Type of every exported type
	withError := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if de.IsDir() {
			if rel != "." && skipDir(rel, de.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil || decl.Name.Name != "Error" || decl.Type.Params.NumFields() != 0 ||
					decl.Type.Results.NumFields() != 1 || typeName(decl.Type.Results.List[0].Type) != "string" {
					continue
				}
				recv, _ := receiver(decl.Recv.List[0].Type)
				withError[pkg+"."+recv] = true
			case *ast.GenDecl:
				for _, s := range decl.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exported[pkg+"."+s.Name.Name] = true
						}
					case *ast.ValueSpec:
						if decl.Tok != token.VAR {
							continue
						}
						for _, n := range s.Names {
							if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
								d.Sentinels = append(d.Sentinels, pkg+"."+n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return ErrorDecls{}, err
	}
	for t := range withError {
		if exported[t] {
			d.Types = append(d.Types, t)
		}
	}
	sort.Strings(d.Types)
	sort.Strings(d.Sentinels)
	return d, nil
}
