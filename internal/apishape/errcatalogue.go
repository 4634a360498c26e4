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
// with an Error() string method (an alias of such a type in an internal
// package counts: the public package declares it), and its exported package-level variables
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
	aliases := map[string]string{} // pkg.Type of an exported alias -> the aliased pkg.Type
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if de.IsDir() {
			if rel != "." && skipDir(rel, de.Name()) && filepath.ToSlash(rel) != "internal" {
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
		// An internal package declares nothing public; its Error methods
		// make the public aliases of its types error types.
		internal := strings.HasPrefix(filepath.ToSlash(rel), "internal/")
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
						if internal || !s.Name.IsExported() {
							continue
						}
						exported[pkg+"."+s.Name.Name] = true
						if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
							if x, ok := sel.X.(*ast.Ident); ok {
								aliases[pkg+"."+s.Name.Name] = x.Name + "." + sel.Sel.Name
							}
						}
					case *ast.ValueSpec:
						if internal || decl.Tok != token.VAR {
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
	for a, t := range aliases {
		if withError[t] && !withError[a] {
			d.Types = append(d.Types, a)
		}
	}
	sort.Strings(d.Types)
	sort.Strings(d.Sentinels)
	return d, nil
}
