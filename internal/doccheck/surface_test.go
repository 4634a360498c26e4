package doccheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxPublicNames bounds what a user can meet in the public packages,
// counted as `go doc -short` lists it: each const and var declaration (a
// block is one, as go doc shows it), each func, each type with the
// constructors and typed constants go doc lists under it. Methods are not
// counted: they are reached through a name already counted. The bound is
// the surface as it stands, so a new name must replace one a user no
// longer needs; lower it as names go.
const maxPublicNames = 305

// publicDirs are the directories, relative to the module root, of every
// package a user imports: all but internal/, examples/ and tools/, and the
// command's own main package.
func publicDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		base := d.Name()
		if rel != "." && (strings.HasPrefix(base, ".") || base == "internal" || base == "testdata" ||
			base == "node_modules" || rel == "examples" || rel == "tools") {
			return filepath.SkipDir
		}
		dirs = append(dirs, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// surface is one package's `go doc -short` listing, or nil for a
// directory without a library package.
func surface(t *testing.T, dir string) (lines []string, idents int) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "main" {
			return nil, 0
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, 0
	}
	p, err := doc.NewFromFiles(fset, files, "x")
	if err != nil {
		t.Fatal(err)
	}
	value := func(kind string, v *doc.Value) {
		lines = append(lines, kind+" "+strings.Join(v.Names, ", "))
		idents += len(v.Names)
	}
	for _, v := range p.Consts {
		value("const", v)
	}
	for _, v := range p.Vars {
		value("var", v)
	}
	for _, f := range p.Funcs {
		lines = append(lines, "func "+f.Name)
		idents++
	}
	for _, ty := range p.Types {
		lines = append(lines, "type "+ty.Name)
		idents++
		for _, v := range ty.Consts {
			value("    const", v)
		}
		for _, v := range ty.Vars {
			value("    var", v)
		}
		for _, f := range ty.Funcs {
			lines = append(lines, "    func "+f.Name)
			idents++
		}
	}
	return lines, idents
}

// TestPublicSurface holds the public packages to what a user needs: at
// most maxPublicNames entries of `go doc -short` in all. Run with -v to see
// each package's count and, for a failure, every entry.
func TestPublicSurface(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	total, idents := 0, 0
	var all []string
	for _, rel := range publicDirs(t, root) {
		lines, n := surface(t, filepath.Join(root, rel))
		if lines == nil {
			continue
		}
		t.Logf("%4d %s", len(lines), rel)
		total += len(lines)
		idents += n
		for _, l := range lines {
			all = append(all, rel+": "+l)
		}
	}
	sort.Strings(all)
	t.Logf("%d entries, %d exported names", total, idents)
	if total > maxPublicNames {
		t.Errorf("the public packages list %d entries in go doc -short; at most %d:\n%s", total, maxPublicNames, strings.Join(all, "\n"))
	}
}

// TestSurfaceCountsAsGoDoc checks the counter on a package of known shape:
// a block of constants is one entry, a constructor and a typed constant
// block are entries under their type, methods and unexported names none.
func TestSurfaceCountsAsGoDoc(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const (
	A = 1
	B = 2
)

var V = 3

type Kind int

const (
	K1 Kind = iota
	K2
)

type T struct{}

func NewT() *T { return nil }

func (T) M() {}

func F() {}

func g() {}

type u struct{}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, idents := surface(t, dir)
	want := []string{"const A, B", "var V", "func F", "type Kind", "    const K1, K2", "type T", "    func NewT"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("entries %q, want %q", lines, want)
	}
	if idents != 9 {
		t.Errorf("%d names, want 9", idents)
	}
}

// TestMetaHasNoMethods: table.Meta, which users embed, exposes its
// fields (the keys, ETag and Timestamp) and no exported method; the ETag
// bookkeeping tablekit's packages share stays behind internal/tableio.
func TestMetaHasNoMethods(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(filepath.Join(root, "table"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, "table", n), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/tablekit/tablekit/table")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ty := range p.Types {
		if ty.Name != "Meta" {
			continue
		}
		found = true
		for _, m := range ty.Methods {
			t.Errorf("table.Meta has the exported method %s; Meta exposes keys, ETag and Timestamp only", m.Name)
		}
	}
	if !found {
		t.Fatal("table.Meta not found")
	}
}
