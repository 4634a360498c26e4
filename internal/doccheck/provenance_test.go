package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// provenanceExcluded are the directories, relative to the module root,
// whose Go files the provenance check skips, each with everything under
// it: programs and tooling whose comments are not library documentation.
// Every other directory of the module is checked, so a new package is
// covered the day it is added.
var provenanceExcluded = []string{
	"examples",
	"internal/benchkit",
	"internal/integration",
	"tools",
}

// A comment says what the code does and why; where the code came from
// (an issue, a work session, the day it was written, the figures of a
// benchmark run) belongs in git history and BENCHMARKS.md. Each rule below
// matches one kind of such provenance. "round" alone is not one of them:
// the library's comments use it for the passes of retry and rebalancing
// loops.
var provenanceRules = []struct {
	what string
	re   *regexp.Regexp
}{
	{"an issue number", regexp.MustCompile(`(?i)\bissues?\s*#?\s*\d+`)},
	{"a numbered defect or ticket", regexp.MustCompile(`(?i)\b(?:defect|bug|ticket|PR|pull request)s?\s*#\s*\d+`)},
	{"a work session", regexp.MustCompile(`(?i)\bsessions?\b`)},
	{"a round of work", regexp.MustCompile(`(?i)\b(?:round|sitting|session)s?\s+of\s+work\b|\b(?:round|sitting)\s+#?\d+\b|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))\s+sittings?\b`)},
	{"a date", regexp.MustCompile(`\b(?:19|20)\d{2}-[01]\d-[0-3]\d\b`)},
	{"a date", regexp.MustCompile(`\b(?:\d{1,2}\s+)?(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+(?:\d{1,2},\s+)?(?:19|20)\d{2}\b`)},
	{"a benchmark figure", regexp.MustCompile(`\b\d[\d.,]*\s*(?:ns|B|allocs)/op\b`)},
}

// serviceVersion matches the words that make an ISO date in a comment a
// service version ("x-ms-version 2019-02-02", "versions before
// 2020-12-06"): Azure Storage names its REST versions by date.
var serviceVersion = regexp.MustCompile(`(?i)\bversions?\b`)

// tlsSession matches the one legitimate "session" of this library's
// domain: a TLS (or SSL) session of a connection.
var tlsSession = regexp.MustCompile(`(?i)\b(?:TLS|SSL)\s+sessions?\b`)

// provenanceFinding is one match in a comment's text.
type provenanceFinding struct {
	offset int // byte offset in the text
	what   string
	match  string
}

// findProvenance returns the provenance in text, the text of one comment
// group (its comments' source, "//" or "/*" included, joined by
// newlines), in the order it appears.
func findProvenance(text string) []provenanceFinding {
	var out []provenanceFinding
	for _, r := range provenanceRules {
		for _, loc := range r.re.FindAllStringIndex(text, -1) {
			m := text[loc[0]:loc[1]]
			switch r.what {
			case "a date":
				// A date with "version" shortly before it, in the same
				// comment, is a service version, not a date of writing.
				if serviceVersion.MatchString(text[max(0, loc[0]-80):loc[0]]) {
					continue
				}
			case "a work session":
				if covered(tlsSession.FindAllStringIndex(text, -1), loc) {
					continue
				}
			}
			out = append(out, provenanceFinding{offset: loc[0], what: r.what, match: m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].offset < out[j].offset })
	return out
}

// covered reports whether loc lies inside one of spans.
func covered(spans [][]int, loc []int) bool {
	for _, s := range spans {
		if s[0] <= loc[0] && loc[1] <= s[1] {
			return true
		}
	}
	return false
}

// provenanceFiles lists the non-test Go files of the module outside
// provenanceExcluded, as paths relative to root.
func provenanceFiles(t *testing.T, root string) []string {
	t.Helper()
	excluded := map[string]bool{}
	for _, d := range provenanceExcluded {
		excluded[d] = true
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (excluded[rel] || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// commentGroupFindings returns "file:line: what: match" for each finding
// in the comments of cg.
func commentGroupFindings(fset *token.FileSet, cg *ast.CommentGroup) []string {
	var text strings.Builder
	starts := make([]int, len(cg.List))
	for i, c := range cg.List {
		if i > 0 {
			text.WriteByte('\n')
		}
		starts[i] = text.Len()
		text.WriteString(c.Text)
	}
	s := text.String()
	var out []string
	for _, f := range findProvenance(s) {
		i := sort.SearchInts(starts, f.offset+1) - 1
		pos := fset.Position(cg.List[i].Slash)
		pos.Line += strings.Count(s[starts[i]:f.offset], "\n")
		out = append(out, pos.Filename+":"+strconv.Itoa(pos.Line)+": "+f.what+": "+f.match)
	}
	return out
}

// TestCommentsCarryNoProvenance: no comment of the library's non-test Go
// files names an issue, a work session or round of work, a date, or
// benchmark output; each one found is reported as file:line.
func TestCommentsCarryNoProvenance(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, d := range provenanceExcluded {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("provenanceExcluded names %s, which is no directory of the module: remove it from the list", d)
		}
	}
	files := provenanceFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found %d files; the walk missed most of the module", len(files))
	}
	fset := token.NewFileSet()
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range file.Comments {
			for _, f := range commentGroupFindings(fset, cg) {
				t.Error(f)
			}
		}
	}
}

// TestFindProvenance checks the rules themselves on sample comments: what
// must be flagged, and the library's ordinary wording that must not be.
func TestFindProvenance(t *testing.T) {
	flagged := map[string]string{
		"// 12 MiB (canned transport, BENCHMARKS.md, issue 26's second run);": "an issue number",
		"// quotedKeysInBatch: defect #7 of issue 15.":                        "a numbered defect or ticket",
		"// see Issue #42":    "an issue number",
		"// issues 15 and 17": "an issue number",
		"// loopback (BENCHMARKS.md,\n// ninth session). Here": "a work session",
		"// added this session":                                "a work session",
		"// measured in the second round of work":              "a round of work",
		"// as of round 3":                                     "a round of work",
		"// from the third sitting":                            "a round of work",
		"// fixed on 2026-11-27":                               "a date",
		"/* written 2026-11-27 */":                             "a date",
		"// the run of 27 November 2026":                       "a date",
		"// as of November 27, 2026":                           "a date",
		"// costs 1534 ns/op and 12 allocs/op":                 "a benchmark figure",
		"// fixes PR #12":                                      "a numbered defect or ticket",
	}
	for text, want := range flagged {
		got := findProvenance(text)
		if len(got) == 0 {
			t.Errorf("%q: not flagged, want %s", text, want)
			continue
		}
		if got[0].what != want {
			t.Errorf("%q: flagged as %s (%q), want %s", text, got[0].what, got[0].match, want)
		}
	}
	clean := []string{
		"// an issue with keys that contain an apostrophe",
		"// the issues a repair fixes, counted per kind",
		"// opts.Progress, when set, is called per issue fixed",
		"// go round again when another writer got there first",
		"// each round has one winner; the next round reads the header",
		"// the last round that renewed the leases",
		"// a round trip on the calling goroutine",
		"// x-ms-version 2019-02-02 has no error code header",
		"// \"Create a service SAS\", Table service, version 2018-11-09 and earlier\n// than 2020-12-06 (the form aztables signs).",
		"// the single Put Blob limit of the service versions before\n// 2019-12-12 and far above",
		"// resumes a TLS session where the server allows it",
		"// employee #456 moves to the archive",
		"// 1 MiB per entity, 4 MiB per transaction (see BENCHMARKS.md)",
		"// a page of 1,000 entities, 100 ms back-off",
	}
	for _, text := range clean {
		if got := findProvenance(text); len(got) != 0 {
			t.Errorf("%q: flagged as %s (%q), want clean", text, got[0].what, got[0].match)
		}
	}
}

// TestCommentGroupFindingsNameTheLine: a finding is reported at the line
// of the comment that holds it, within a group and within a block comment.
func TestCommentGroupFindingsNameTheLine(t *testing.T) {
	src := "package p\n\n// Line 3 is clean.\n// Line 4 names issue 26.\n//\n/* Line 6 is clean,\n   line 7 names 2026-11-27. */\nvar X int\n"
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cg := range file.Comments {
		got = append(got, commentGroupFindings(fset, cg)...)
	}
	want := []string{"p.go:4: an issue number: issue 26", "p.go:7: a date: 2026-11-27"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
