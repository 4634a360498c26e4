package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Func is an exported function or method of a public package whose first
// parameter is a context.Context.
type Func struct {
	// Name is pkg.Func, pkg.Type.Method or pkg.Interface.Method (the
	// package's name, not its path).
	Name string
	// Pos is where it is declared.
	Pos token.Position
	// Interface is true for a method of an exported interface: it has no
	// body to call, its implementations are listed themselves.
	Interface bool
	// Options is true when the last parameter is a *XxxOptions.
	Options bool
}

// Discover parses every public package under the module root (all but
// internal/, examples/, tools/, cmd/, testdata and hidden trees; every
// file, whatever its build constraints, test files excluded) and returns
// its exported ctx functions and methods, interface methods included, in
// file order, with the number of files parsed.
func Discover(root string) ([]Func, int, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && skipDir(rel, d.Name()) {
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
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return funcs(fset, files), len(files), nil
}

// skipDir reports whether the directory at rel (relative to the module
// root) holds no public package: internal code, programs, tools, test
// data, hidden and vendored trees.
func skipDir(rel, name string) bool {
	switch filepath.ToSlash(rel) {
	case "internal", "examples", "tools", "cmd":
		return true
	}
	return name == "testdata" || name == "node_modules" || name == "vendor" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// funcs returns the exported ctx functions and methods files declare
// (functions, methods of exported types, methods of exported interfaces).
func funcs(fset *token.FileSet, files []*ast.File) []Func {
	var out []Func
	consider := func(pkg, name string, ft *ast.FuncType, typeParams []string, pos token.Pos, iface bool) {
		if ft.Params.NumFields() == 0 || !isContext(ft.Params.List[0].Type) {
			return
		}
		out = append(out, Func{Name: pkg + "." + name, Pos: fset.Position(pos), Interface: iface, Options: endsWithOptions(ft, typeParams)})
	}
	for _, f := range files {
		pkg := f.Name.Name
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name, tps := d.Name.Name, typeParamNames(d.Type.TypeParams)
				if d.Recv != nil {
					recv, rtps := receiver(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					name, tps = recv+"."+name, rtps
				}
				consider(pkg, name, d.Type, tps, d.Pos(), false)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					it, ok := ts.Type.(*ast.InterfaceType)
					if !ok {
						continue
					}
					tps := typeParamNames(ts.TypeParams)
					for _, m := range it.Methods.List {
						ft, ok := m.Type.(*ast.FuncType)
						if !ok || len(m.Names) == 0 || !m.Names[0].IsExported() {
							continue // an embedded interface or constraint
						}
						consider(pkg, ts.Name.Name+"."+m.Names[0].Name, ft, tps, m.Pos(), true)
					}
				}
			}
		}
	}
	return out
}

// isContext reports whether e is context.Context.
func isContext(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "context" && sel.Sel.Name == "Context"
}

// endsWithOptions reports whether ft's last parameter is a pointer to a
// type named XxxOptions (local, qualified or an instance of a generic one).
// A pointer to a type parameter counts only when the parameter is named
// opts or options: an interface generic in its options type
// (cli.Indexer[O]) takes opts *O last, while v *T (an entity) is no
// options.
func endsWithOptions(ft *ast.FuncType, typeParams []string) bool {
	lastField := ft.Params.List[len(ft.Params.List)-1]
	star, ok := lastField.Type.(*ast.StarExpr)
	if !ok {
		return false // a value, or a variadic list, which nothing can follow
	}
	if id, ok := star.X.(*ast.Ident); ok && slices.Contains(typeParams, id.Name) {
		for _, n := range lastField.Names {
			if n.Name != "opts" && n.Name != "options" {
				return false
			}
		}
		return len(lastField.Names) > 0
	}
	return strings.HasSuffix(typeName(star.X), "Options")
}

// receiver returns the name of a method's receiver type and the names of
// its type parameters.
func receiver(e ast.Expr) (string, []string) {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	var tps []string
	switch v := e.(type) {
	case *ast.IndexExpr:
		if id, ok := v.Index.(*ast.Ident); ok {
			tps = append(tps, id.Name)
		}
		e = v.X
	case *ast.IndexListExpr:
		for _, ix := range v.Indices {
			if id, ok := ix.(*ast.Ident); ok {
				tps = append(tps, id.Name)
			}
		}
		e = v.X
	}
	return typeName(e), tps
}

// typeParamNames lists the names a type parameter list declares.
func typeParamNames(l *ast.FieldList) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, f := range l.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
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
