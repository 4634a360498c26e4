package doccheck

import (
	"bufio"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet in the docs must be code that compiles and runs: each
// ```go block is preceded by a marker. The README's first block is a whole
// program, marked "<!-- checked: program -->", which
// TestReadmeProgramRuns runs. Every other block's marker names a package
// directory and an Example function, and every line of the snippet must stand, token for
// token and in order, in the package's test files read with the Example's
// own file last (so a snippet may show a type declared beside it). go test compiles
// the Example and checks its // Output:, so a snippet cannot drift from
// working code without this test failing.
var docs = []string{"README.md", "ARCHITECTURE.md"}

var marker = regexp.MustCompile(`^<!-- checked: (\S+) (Example\w*) -->$`)

// programMarker marks the README's first block: a program, not a part of
// an Example.
const programMarker = "<!-- checked: program -->"

type snippet struct {
	doc, dir, example string
	line              int // where the block starts in the doc
	code              []string
}

func TestDocSnippetsAreTestedExamples(t *testing.T) {
	var all []snippet
	for _, doc := range docs {
		f, err := os.Open(filepath.Join("..", "..", doc))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, snippets(t, doc, f)...)
		f.Close()
	}
	if len(all) == 0 {
		t.Fatal("no Go snippets found in the docs: the check would pass vacuously")
	}
	for _, s := range all {
		file := exampleFile(t, s)
		if file == "" {
			continue
		}
		// The package's other test files come first, so a snippet may
		// show a type they declare before the Example's own lines.
		var lines []string
		others, _ := filepath.Glob(filepath.Join("..", "..", s.dir, "*_test.go"))
		for _, f := range others {
			if f != file {
				lines = append(lines, readTokenLines(t, f)...)
			}
		}
		lines = append(lines, readTokenLines(t, file)...)
		at := 0
		for _, code := range s.code {
			want := tokens([]byte(code))
			if want == "" {
				continue
			}
			found := false
			for ; at < len(lines); at++ {
				if lines[at] == want {
					found, at = true, at+1
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: snippet line %q is not in %s (%s), in order", s.doc, s.line, strings.TrimSpace(code), file, s.example)
				break
			}
		}
	}
}

func readTokenLines(t *testing.T, file string) []string {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return tokenLines(src)
}

// snippets reads the ```go blocks of a doc and the markers before them.
func snippets(t *testing.T, doc string, f *os.File) []snippet {
	var out []snippet
	var cur *snippet
	prev := ""
	blocks := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code = append(cur.code, line)
		case line == "```go":
			blocks++
			if strings.TrimSpace(prev) == programMarker {
				if doc != "README.md" || blocks != 1 {
					t.Errorf("%s:%d: only the README's first Go block is a program that a test runs", doc, n)
				}
				cur = &snippet{doc: doc, line: n} // TestReadmeProgramRuns runs it
				continue
			}
			m := marker.FindStringSubmatch(strings.TrimSpace(prev))
			if m == nil {
				t.Errorf("%s:%d: a Go snippet without a <!-- checked: DIR ExampleName --> line before it", doc, n)
				cur = &snippet{doc: doc, line: n}
				continue
			}
			cur = &snippet{doc: doc, dir: m[1], example: m[2], line: n}
		}
		if line != "" {
			prev = line
		}
	}
	// Blocks without a marker were reported; programs are run by
	// TestReadmeProgramRuns; only the Examples' snippets go on.
	var ok []snippet
	for _, s := range out {
		if s.example != "" {
			ok = append(ok, s)
		}
	}
	return ok
}

// exampleFile finds the _test.go file of s.dir that declares s.example.
func exampleFile(t *testing.T, s snippet) string {
	files, _ := filepath.Glob(filepath.Join("..", "..", s.dir, "*_test.go"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^func ` + s.example + `\(\) \{$`).Match(src) {
			return f
		}
	}
	t.Errorf("%s:%d: no func %s() in %s/*_test.go", s.doc, s.line, s.example, s.dir)
	return ""
}

// tokenLines is the Go source's tokens, comments dropped, one string per
// line; tokens compares lines without regard to spacing or comments.
func tokenLines(src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	s.Init(file, src, nil, 0)
	byLine := map[int][]string{}
	last := 0
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		l := file.Line(pos)
		byLine[l] = append(byLine[l], tokText(tok, lit))
		last = l
	}
	out := make([]string, last+1)
	for l, toks := range byLine {
		out[l] = strings.Join(toks, " ")
	}
	return out
}

func tokens(line []byte) string {
	l := tokenLines(line)
	if len(l) < 2 {
		return ""
	}
	return l[1]
}

func tokText(tok token.Token, lit string) string {
	if lit != "" {
		return lit
	}
	return tok.String()
}
