package apishape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exceptions are the ctx functions and methods that keep a signature
// without trailing options, each with the reason. An entry that no longer
// names a miss fails the test, so the list cannot outlive its reason.
var exceptions = map[string]string{
	// A context helper, like azcore's runtime.WithCaptureResponse: it
	// returns a context for the requests made with it and sends nothing.
	"table.WithWireExchange": "returns a context; sends no request",

	// KeyWrapper is implemented by the user over a key vault or a KMS
	// (azkeys' WrapKey/UnwrapKey take their own options, which an adapter
	// passes itself); options here would be a parameter every
	// implementation ignores. LocalKeys implements it.
	"table.KeyWrapper.WrapKey":   "interface the user implements",
	"table.KeyWrapper.UnwrapKey": "interface the user implements",
	"table.LocalKeys.WrapKey":    "implements table.KeyWrapper",
	"table.LocalKeys.UnwrapKey":  "implements table.KeyWrapper",

	// Handle methods are consistency.Handler values, a func type whose
	// signature the Worker defines: a Worker calls them, users do not.
	"patterns.InterPartitionIndex.Handle":   "a consistency.Handler",
	"patterns.EventualIndexEntities.Handle": "a consistency.Handler",
	"consistency.Mover.Handle":              "a consistency.Handler",

	// Target is the port a user implements for where the Mover writes;
	// the Mover is its only caller, so options would be a parameter every
	// implementation ignores. TableTarget and BlobTarget implement it.
	"consistency.Target.Put":      "interface the user implements",
	"consistency.TableTarget.Put": "implements consistency.Target",
	"consistency.BlobTarget.Put":  "implements consistency.Target",

	// Like WithWireExchange: it attaches a QueryStats to a context and
	// sends nothing.
	"table.WithQueryStats": "returns a context; sends no request",
}

// minChecked guards the walk itself: the public packages have about 160
// ctx functions and methods, so fewer than 120 means the walk or the parse
// missed packages, and a clean result would prove nothing.
const minChecked = 120

// TestEveryContextMethodEndsWithOptions parses every public package of the
// module (all but internal/, examples/, tools/, cmd/ and testdata) and
// reports each exported ctx function or method, interface methods
// included, without a trailing *XxxOptions that is not an exception.
func TestEveryContextMethodEndsWithOptions(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
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
		// Every file, whatever its build constraints: each is public API
		// on some platform.
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked, misses := check(fset, files)
	if checked < minChecked {
		t.Fatalf("checked %d ctx functions and methods in %d files, want at least %d: the walk missed packages", checked, len(files), minChecked)
	}
	t.Logf("checked %d ctx functions and methods in %d files", checked, len(files))
	excused := map[string]bool{}
	for _, m := range misses {
		if _, ok := exceptions[m.name]; ok {
			excused[m.name] = true
			continue
		}
		t.Errorf("%s: %s takes a context first but does not end with a *XxxOptions parameter (nil = defaults)", m.pos, m.name)
	}
	for name := range exceptions {
		if !excused[name] {
			t.Errorf("exception %s matches no miss any more: remove it", name)
		}
	}
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

// miss is an exported ctx function or method without trailing options.
type miss struct {
	pos  token.Position
	name string // pkg.Func, pkg.Type.Method or pkg.Interface.Method
}

// check returns how many exported ctx functions and methods files declare
// (functions, methods of exported types, methods of exported interfaces)
// and those of them that do not end with a *XxxOptions parameter.
func check(fset *token.FileSet, files []*ast.File) (checked int, misses []miss) {
	consider := func(pkg, name string, ft *ast.FuncType, typeParams []string, pos token.Pos) {
		if ft.Params.NumFields() == 0 || !isContext(ft.Params.List[0].Type) {
			return
		}
		checked++
		if !endsWithOptions(ft, typeParams) {
			misses = append(misses, miss{pos: fset.Position(pos), name: pkg + "." + name})
		}
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
				consider(pkg, name, d.Type, tps, d.Pos())
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
						consider(pkg, ts.Name.Name+"."+m.Names[0].Name, ft, tps, m.Pos())
					}
				}
			}
		}
	}
	return checked, misses
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
