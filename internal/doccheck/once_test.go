package doccheck

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// sharedFacts are the facts of an option many types share, each stated
// in one doc comment (the file named) and referred to elsewhere, so the
// statement cannot drift apart between copies.
var sharedFacts = map[string]string{
	// How to give tablekit a tracing provider: "Tracing" in package table.
	"azotel.NewTracingProvider":             "table/doc.go",
	"aztables keeps a client's provider":    "table/doc.go",
	"records nothing and costs nothing":     "table/doc.go",
	"the SDK's HTTP spans of the operation": "table/doc.go",
}

// TestSharedOptionFactsAreStatedOnce: each fact of sharedFacts appears in
// the comments of exactly one non-test file of the library, its home.
func TestSharedOptionFactsAreStatedOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	found := map[string][]string{}
	for _, dir := range libraryPackages(t) {
		if strings.HasPrefix(dir, "internal") {
			continue // not documentation a user reads
		}
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			// Comments wrap anywhere: compare with line breaks as spaces.
			var text strings.Builder
			for _, g := range file.Comments {
				text.WriteString(strings.Join(strings.Fields(g.Text()), " "))
				text.WriteByte(' ')
			}
			rel, _ := filepath.Rel(root, f)
			for fact := range sharedFacts {
				if strings.Contains(text.String(), fact) {
					found[fact] = append(found[fact], filepath.ToSlash(rel))
				}
			}
		}
	}
	for fact, home := range sharedFacts {
		if got := found[fact]; len(got) != 1 || got[0] != home {
			t.Errorf("%q is stated in %v; state it once, in %s, and refer to it elsewhere", fact, got, home)
		}
	}
}
