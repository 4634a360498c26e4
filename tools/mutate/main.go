// Command mutate measures whether a package's tests notice its code going
// wrong: it makes small faults (mutants) in the package's source, runs the
// package's tests against each, and reports how many the tests killed.
//
//	go build -C tools -o /tmp/mutate ./mutate   # from the repository's root
//	/tmp/mutate [-n 150] [-seed 1] [-timeout 30s] [-files re] [-testfiles re] [-floor 90] ./keys ./batch
//
// Mutators: a flipped comparison (< <= > >= == !=, each to the others of
// its family), && and || swapped, an if or for condition negated, an
// integer literal moved by one either way, an error return removed (the
// body of `if err != nil { ... return ... }` emptied), and a call or
// increment statement removed.
//
// Each mutant's test binary is compiled through `go test -c -overlay`, so
// the working tree is never edited, and then run under the mutant's own
// timeout (compiling, slow on a loaded machine, is not counted; the process
// group is killed when it expires), so a mutant that deadlocks ends in
// seconds and the tests still running are named. The tests run without Azurite: TABLEKIT_CONNECTION_STRING and
// the long-mode variables are removed from their environment, so
// integration tests skip.
//
// What a mutant costs is compiling, not running: measured on 2026-11-26
// on the shared 2-core machine (load average about 10), a mutant of
// patterns/model.go compiled in 65 s (the package with its internal tests
// 18 s, the external test package 37 s, the bench kit 5 s, linking 3 s)
// and its tests ran in 8.5 s; one of table/encode.go compiled in about 76 s
// of CPU and ran in 2.5 s. Running only the tests that cover the mutated
// line (a coverage profile per test) would save part of the smaller share,
// so the tool does not do it. -testfiles saves on the larger: only the
// test files that match (and those declaring a helper they use, found by
// name) are compiled into each mutant's binary, the others replaced by an
// empty file of their package. With the model's four test files a patterns
// mutant compiles in 19 s instead of 65. The trade: a mutant that only a
// left-out test would kill counts as survived, so the score is a lower
// bound of the whole package's; use it for code whose tests are known
// (the entity model's are patterns/model_*_test.go) and say so with the
// score.
//
// A mutant is killed when the tests fail, survived when they pass, timed out
// when they run past -timeout (counted as detected, reported apart), and not
// viable when it does not compile. The score is detected / (detected +
// survived). Mutants listed in the ignore file (tools/mutate/equivalent.txt:
// mutants that cannot change behaviour, each with its reason) are left out
// before sampling. -n samples that many mutants a package with -seed, so a
// run is reproducible; -n 0 runs them all. With -floor, the command exits 1
// when a package scores below it.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"hash/fnv"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// mutant is one fault: the bytes [start, end) of file replaced by repl.
type mutant struct {
	file       string // path relative to the module root, slash-separated
	abs        string
	line, col  int
	fn         string // enclosing function ("" at package level)
	kind       string
	orig, repl string
	start, end int
	context    string // the trimmed source line, for a stable identity
	nth        int    // 1 + how many identical changes come before it on its line
}

// key identifies a mutant in the ignore file independently of line numbers:
// file, function, the change and the source line it is made in.
func (m mutant) key() string {
	change := m.kind + " " + strconv.Quote(m.orig) + " -> " + strconv.Quote(m.repl)
	if m.nth > 1 {
		change += " #" + strconv.Itoa(m.nth)
	}
	return strings.Join([]string{m.file, m.fn, change, m.context}, "\t")
}

func (m mutant) String() string {
	return fmt.Sprintf("%s:%d:%d %s: %s %q -> %q in %q", m.file, m.line, m.col, m.fn, m.kind, m.orig, m.repl, m.context)
}

type outcome int

const (
	killed outcome = iota
	survived
	timedOut
	notViable
)

func (o outcome) String() string {
	return [...]string{"killed", "survived", "timed out", "not viable"}[o]
}

type config struct {
	n       int
	seed    uint64
	timeout time.Duration
	files   *regexp.Regexp
	ignore  map[string]bool
	floor   float64
	jobs    int
	verbose bool
	skip    string
	list    bool
	only    map[string]bool // -only: test exactly these mutants
	ctx     context.Context // cancelled when the run is interrupted
	// stubs replaces test files that hold only benchmarks, and each
	// package's integration_test.go, with an empty file of their package,
	// and a kept test file that declares benchmarks with itself without
	// them (path: replacement path), in every overlay: go test runs no
	// benchmark without -bench, and their imports (the patterns, the bench
	// kit, internal/integration) would be compiled for every mutant.
	stubs map[string]string
	root  string
	tests []string // -tests: the packages whose tests judge the mutants
	// testFiles (-testfiles) keeps only the test files whose slash path
	// from the module root matches, and those declaring what a kept one
	// uses; the others are stubbed like benchmark files.
	testFiles *regexp.Regexp
	dirs      map[string]string // each tested package's directory, where its tests run
	ignoreAt  string
}

// minTimeout is the least time a mutant's tests get to run: more than the
// deadlines the tests that wait on goroutines set themselves (30 s for the
// Writer's), so that a deadlock fails there, naming the test, with every
// goroutine's stack, rather than at this limit.
const minTimeout = 45 * time.Second

// buildLimit bounds compiling one mutant's test binary. Compiling is not
// the mutant's behaviour: on a loaded machine it takes minutes, and it must
// not be counted against the tests' timeout (it once turned every mutant
// of a run into a time-out).
const buildLimit = 15 * time.Minute

func main() {
	var c config
	var files, ignore string
	flag.IntVar(&c.n, "n", 150, "mutants sampled per package (0: all)")
	flag.Uint64Var(&c.seed, "seed", 1, "sampling seed")
	flag.DurationVar(&c.timeout, "timeout", 0, "per-mutant limit on running the tests, compiling not included (0: three times the unmutated run, at least 45s, so a loaded machine does not turn slow tests into time-outs)")
	flag.StringVar(&files, "files", "", "only mutate files whose name (slash path from the module root) matches this regexp")
	flag.StringVar(&ignore, "ignore", "tools/mutate/equivalent.txt", "file of equivalent mutants (relative to the module root)")
	flag.Float64Var(&c.floor, "floor", 0, "exit 1 when a package's score (percent) is below this")
	flag.IntVar(&c.jobs, "j", 1, "mutants tested at once")
	flag.BoolVar(&c.verbose, "v", false, "print every mutant's outcome, not only survivors")
	var only string
	flag.StringVar(&only, "only", "", "test only the mutants whose ignore keys this file lists, one a line (the survivors of an earlier run, after tests were added); -n and -seed do not apply")
	flag.BoolVar(&c.list, "list", false, "list the mutants a run would test (position, then ignore key), without testing any: the sample of -n and -seed (-n 0: every mutant not ignored)")
	var tests string
	flag.StringVar(&tests, "tests", "", "comma-separated packages whose tests judge the mutants (default: the mutated package's own); for code whose tests live elsewhere, as the entity model's in ./conformance")
	flag.StringVar(&c.skip, "skip", "", "go test -skip: tests not run against mutants (slow ones; mutants only they would kill then count as survivors)")
	var testFiles string
	flag.StringVar(&testFiles, "testfiles", "", "only the test files whose name (slash path from the module root) matches this regexp judge the mutants, with the test files that declare what they use; the others are left out of every build (compiling them is most of a mutant's cost in a package with many tests), so mutants only they would kill count as survivors")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mutate [flags] ./pkg ...")
		os.Exit(2)
	}
	if files != "" {
		c.files = regexp.MustCompile(files)
	}
	if tests != "" {
		c.tests = strings.Split(tests, ",")
	}
	if testFiles != "" {
		c.testFiles = regexp.MustCompile(testFiles)
	}
	root, err := moduleRoot()
	if err != nil {
		fatal(err)
	}
	c.root = root
	c.ignoreAt = filepath.Join(root, ignore)
	if c.ignore, err = readIgnore(c.ignoreAt); err != nil {
		fatal(err)
	}
	if only != "" {
		b, err := os.ReadFile(only)
		if err != nil {
			fatal(err)
		}
		c.only = map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimPrefix(strings.TrimSpace(line), "ignore key: "); line != "" {
				c.only[line] = true
			}
		}
	}
	failed := false
	for _, pkg := range flag.Args() {
		score, err := runPackage(c, pkg)
		if errors.Is(err, errStopped) {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(1)
		}
		if err != nil {
			fatal(err)
		}
		if c.floor > 0 && score < c.floor {
			fmt.Printf("FAIL %s: score %.1f %% is below the floor %.1f %%\n", pkg, score, c.floor)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// readIgnore reads the ignore file: one mutant key a line (as printed for a
// survivor, tab-separated), each group of keys preceded by a comment giving
// the reason they are equivalent. A key with no reason above it is refused.
func readIgnore(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	reason := false
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			reason = false
		case strings.HasPrefix(line, "#"):
			reason = true
		case !reason:
			return nil, fmt.Errorf("%s:%d: an equivalent mutant needs a reason: a # comment line above it", path, ln)
		default:
			out[line] = true
		}
	}
	return out, sc.Err()
}

func runPackage(c config, pkg string) (float64, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\n{{range .GoFiles}}{{.}}\n{{end}}", pkg).Output()
	if err != nil {
		return 0, fmt.Errorf("go list %s: %w", pkg, err)
	}
	lines := strings.Fields(string(out))
	dir := lines[0]
	var all []mutant
	for _, name := range lines[1:] {
		abs := filepath.Join(dir, name)
		rel, _ := filepath.Rel(c.root, abs)
		rel = filepath.ToSlash(rel)
		if c.files != nil && !c.files.MatchString(rel) {
			continue
		}
		ms, err := collect(abs, rel)
		if err != nil {
			return 0, err
		}
		all = append(all, ms...)
	}
	var pool []mutant
	ignored := 0
	for _, m := range all {
		if c.ignore[m.key()] {
			ignored++
			continue
		}
		if c.only != nil && !c.only[m.key()] {
			continue
		}
		pool = append(pool, m)
	}
	// Each mutant's rank is a hash of the seed and its key: the sample is
	// the n lowest, so it depends only on the seed and on which mutants
	// exist, and a mutant added to the ignore file (or a line edited
	// elsewhere) leaves the rest of the sample as it was. A smaller -n
	// takes a subset of a larger one's sample.
	rank := func(m mutant) uint64 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d\x00%s", c.seed, m.key())
		return h.Sum64()
	}
	slices.SortFunc(pool, func(a, b mutant) int { return cmp.Compare(rank(a), rank(b)) })
	if c.only == nil && c.n > 0 && len(pool) > c.n {
		pool = pool[:c.n]
	}
	slices.SortFunc(pool, func(a, b mutant) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.start, b.start), cmp.Compare(a.repl, b.repl))
	})
	if c.list {
		for _, m := range pool {
			fmt.Printf("%s:%d:%d\t%s\n", m.file, m.line, m.col, m.key())
		}
		return 100, nil
	}

	tmp, err := os.MkdirTemp("", "mutate")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	// The unmutated tests must pass, or every mutant would look killed.
	start := time.Now()
	tested := c.tests
	if len(tested) == 0 {
		tested = []string{pkg}
	}
	c.tests, c.dirs, c.stubs = tested, map[string]string{}, map[string]string{}
	for _, tp := range tested {
		out, err := exec.Command("go", "list", "-f", "{{.Dir}}", tp).Output()
		if err != nil {
			return 0, fmt.Errorf("go list %s: %w", tp, err)
		}
		c.dirs[tp] = strings.TrimSpace(string(out))
		stubs, err := benchStubs(tp, tmp, c.root, c.testFiles)
		if err != nil {
			return 0, err
		}
		maps.Copy(c.stubs, stubs)
	}
	base, err := writeOverlay(tmp, "base", c.stubs, "", "")
	if err != nil {
		return 0, err
	}
	limit := 4 * c.timeout
	if c.timeout == 0 {
		limit = 10 * time.Minute
	}
	o, log, ran := test(c, base, limit)
	if o == notViable && len(c.stubs) > 0 {
		// A benchmark file also holds a helper other tests use: keep them all.
		if c.testFiles != nil {
			fmt.Printf("%s: the test files -testfiles keeps do not compile alone; every test file judges the mutants\n%s\n", pkg, indent(tail(log, 5)))
		}
		c.stubs = nil
		o, log, ran = test(c, filepath.Join(tmp, "base-all"), limit)
	}
	if o != survived {
		return 0, fmt.Errorf("the tests of %s fail without any mutant (%s):\n%s", pkg, o, tail(log, 40))
	}
	if c.timeout == 0 {
		c.timeout = max(3*ran, minTimeout).Round(time.Second)
	}
	fmt.Printf("%s: %d mutants (%d equivalent ones ignored), testing %d (seed %d); unmutated tests build and run in %s, run in %s (%d test files left out, benchmark-only, integration or outside -testfiles, or benchmarks trimmed); timeout %s a mutant's run\n",
		pkg, len(all), ignored, len(pool), c.seed, time.Since(start).Round(100*time.Millisecond), ran.Round(100*time.Millisecond), len(c.stubs), c.timeout)

	// An interrupt (or a CI step's timeout) stops the run: mutants in
	// progress are dropped and the summary covers those that finished.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	var stopped atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.ctx = ctx
	go func() {
		if _, ok := <-stop; ok {
			stopped.Store(true)
			cancel()
		}
	}()
	results := make([]outcome, len(pool))
	finished := make([]bool, len(pool))
	done := 0
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < max(c.jobs, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(pool) || stopped.Load() {
					return
				}
				m := pool[i]
				o, log, err := runMutant(c, tmp, i, m)
				if err != nil {
					fatal(err)
				}
				mu.Lock()
				if stopped.Load() {
					mu.Unlock()
					return
				}
				results[i], finished[i] = o, true
				done++
				if done%10 == 0 {
					fmt.Printf("  [%d of %d done, %s]\n", done, len(pool), time.Since(start).Round(time.Second))
				}
				if c.verbose || o == survived || o == timedOut {
					fmt.Printf("  %-10s %s\n", o, m)
				}
				if o == timedOut {
					// The tests still running when the limit struck are
					// the ones missing a deadline of their own.
					fmt.Println(indent(runningTests(log)))
				}
				if c.verbose && o == notViable {
					fmt.Println(indent(tail(log, 5)))
				}
				if o == survived {
					fmt.Printf("    ignore key: %s\n", m.key())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var counts [4]int
	for i, o := range results {
		if finished[i] {
			counts[o]++
		}
	}
	if done < len(pool) {
		fmt.Printf("%s: stopped after %d of %d mutants\n", pkg, done, len(pool))
	}
	detected := counts[killed] + counts[timedOut]
	score := 100.0
	if d := detected + counts[survived]; d > 0 {
		score = 100 * float64(detected) / float64(d)
	}
	fmt.Printf("%s: killed %d, survived %d, timed out %d, not viable %d; score %.1f %% (%d of %d), %s\n",
		pkg, counts[killed], counts[survived], counts[timedOut], counts[notViable], score, detected, detected+counts[survived],
		time.Since(start).Round(time.Second))
	if done < len(pool) {
		return score, errStopped
	}
	return score, nil
}

// errStopped: the run was interrupted; its partial summary is printed, and
// it fails, so that a cut-short run never passes a floor.
var errStopped = errors.New("interrupted before every mutant was tested")

func runMutant(c config, tmp string, i int, m mutant) (outcome, string, error) {
	src, err := os.ReadFile(m.abs)
	if err != nil {
		return 0, "", err
	}
	mutated := slices.Concat(src[:m.start], []byte(m.repl), src[m.end:])
	file := filepath.Join(tmp, fmt.Sprintf("m%d.go", i))
	if err := os.WriteFile(file, mutated, 0o644); err != nil {
		return 0, "", err
	}
	ov, err := writeOverlay(tmp, fmt.Sprintf("m%d", i), c.stubs, m.abs, file)
	if err != nil {
		return 0, "", err
	}
	o, log, _ := test(c, ov, c.timeout)
	return o, log, nil
}

// writeOverlay writes a go build -overlay file: the stubs, and from with
// to when from is set. It returns its path.
func writeOverlay(tmp, name string, stubs map[string]string, from, to string) (string, error) {
	replace := map[string]string{}
	for k, v := range stubs {
		replace[k] = v
	}
	if from != "" {
		replace[from] = to
	}
	b, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", err
	}
	path := filepath.Join(tmp, name+".json")
	return path, os.WriteFile(path, b, 0o644)
}

// usedElsewhere reports whether another test file of the package, among
// names, names one of f's top-level declarations (a helper the tests
// share), by a word match.
func usedElsewhere(f *ast.File, abs, dir string, names []string) bool {
	var decls []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				decls = append(decls, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					decls = append(decls, sp.Name.Name)
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						decls = append(decls, n.Name)
					}
				}
			}
		}
	}
	if len(decls) == 0 {
		return false
	}
	re := regexp.MustCompile(`\b(` + strings.Join(decls, "|") + `)\b`)
	for _, name := range names {
		other := filepath.Join(dir, name)
		if other == abs {
			continue
		}
		if b, err := os.ReadFile(other); err == nil && re.Match(b) {
			return true
		}
	}
	return false
}

// benchStubs finds pkg's test files named for benchmarks that declare no
// test, example or fuzz target, its integration_test.go, and with keep
// every test file whose slash path from root keep does not match, whose
// declarations no kept test file uses, and writes an empty file of the
// same package for each. A helper
// shared only among benchmark files (a canned client) does not keep them:
// the set is narrowed until no kept file names a stubbed file's helper.
func benchStubs(pkg, tmp, root string, keep *regexp.Regexp) (map[string]string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}\n{{range .TestGoFiles}}{{.}}\n{{end}}{{range .XTestGoFiles}}{{.}}\n{{end}}", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pkg, err)
	}
	lines := strings.Fields(string(out))
	dir, names := lines[0], lines[1:]
	parsed := map[string]*ast.File{}
	for _, name := range names {
		// integration_test.go runs internal/integration's suites: the
		// whole stack, compiled again for every mutant, and most of them
		// need Azurite, which a mutant's run does not have.
		integration := name == "integration_test.go"
		rel, _ := filepath.Rel(root, filepath.Join(dir, name))
		unwanted := keep != nil && !keep.MatchString(filepath.ToSlash(rel))
		if !strings.Contains(name, "bench") && !integration && !unwanted {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		runs := false
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				for _, prefix := range []string{"Test", "Example", "Fuzz"} {
					runs = runs || strings.HasPrefix(fd.Name.Name, prefix)
				}
			}
		}
		if !runs || integration || unwanted {
			parsed[name] = f
		}
	}
	for changed := true; changed; {
		changed = false
		var kept []string
		for _, name := range names {
			if parsed[name] == nil {
				kept = append(kept, name)
			}
		}
		for name, f := range parsed {
			if usedElsewhere(f, filepath.Join(dir, name), dir, kept) {
				delete(parsed, name)
				changed = true
			}
		}
	}
	stubs := map[string]string{}
	var kept []string
	for i, name := range names {
		f := parsed[name]
		if f == nil {
			kept = append(kept, name)
			continue
		}
		stub := filepath.Join(tmp, fmt.Sprintf("stub%d_test.go", i))
		if err := os.WriteFile(stub, []byte("package "+f.Name.Name+"\n"), 0o644); err != nil {
			return nil, err
		}
		stubs[filepath.Join(dir, name)] = stub
	}
	trimmed, err := trimBenchmarks(dir, kept, tmp)
	if err != nil {
		return nil, err
	}
	maps.Copy(stubs, trimmed)
	return stubs, nil
}

// trimBenchmarks rewrites each kept test file that declares benchmarks
// without them, and without the helpers and imports only they use: a test
// file that also holds a helper the tests share (table's canned page) would
// otherwise bring the benchmarks' imports (the bench kit, and through it
// patterns and consistency) into every mutant's build, about half of what
// it compiles. A declaration stays when a test, example or fuzz target, an
// init, another kept file or another kept declaration names it (a word
// match, so it errs on keeping), and a method stays with its type. A file
// with a //go: directive is left whole. If a trimmed build does not
// compile, the caller's fallback keeps every file.
func trimBenchmarks(dir string, kept []string, tmp string) (map[string]string, error) {
	fsets := map[string]*token.FileSet{}
	files := map[string]*ast.File{}
	for _, name := range kept {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		fsets[name], files[name] = fset, f
	}
	idents := func(n ast.Node) map[string]bool {
		out := map[string]bool{}
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				out[id.Name] = true
			}
			return true
		})
		return out
	}
	out := map[string]string{}
	for i, name := range kept {
		f := files[name]
		hasBench, directive := false, false
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Benchmark") {
				hasBench = true
			}
		}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				directive = directive || strings.HasPrefix(c.Text, "//go:")
			}
		}
		if !hasBench || directive {
			continue
		}
		elsewhere := map[string]bool{}
		for _, other := range kept {
			if other != name {
				maps.Copy(elsewhere, idents(files[other]))
			}
		}
		// A unit is one function or one spec of a type, var or const
		// declaration, with the names it declares.
		type unit struct {
			node  ast.Node
			names []string
			recv  string // a method's type
			root  bool
		}
		var units []*unit
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				u := &unit{node: d, names: []string{d.Name.Name}}
				if d.Recv != nil && len(d.Recv.List) == 1 {
					u.recv, u.names = recvName(d.Recv.List[0].Type), nil
				} else {
					n := d.Name.Name
					u.root = n == "init" || n == "TestMain" || strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Example") || strings.HasPrefix(n, "Fuzz")
				}
				units = append(units, u)
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					continue
				}
				for _, sp := range d.Specs {
					u := &unit{node: sp}
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						u.names = []string{sp.Name.Name}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							u.names = append(u.names, n.Name)
						}
					}
					units = append(units, u)
				}
			}
		}
		keep := map[ast.Node]bool{}
		live := map[string]bool{}
		for changed := true; changed; {
			changed = false
			for _, u := range units {
				if keep[u.node] {
					continue
				}
				k := u.root || (u.recv != "" && live[u.recv])
				for _, n := range u.names {
					k = k || elsewhere[n] || live[n]
				}
				if k {
					keep[u.node] = true
					maps.Copy(live, idents(u.node))
					for _, n := range u.names {
						live[n] = true
					}
					changed = true
				}
			}
		}
		var decls []ast.Decl
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if keep[d] {
					decls = append(decls, d)
				}
			case *ast.GenDecl:
				if d.Tok == token.IMPORT {
					var specs []ast.Spec
					for _, sp := range d.Specs {
						if importUsed(sp.(*ast.ImportSpec), live) {
							specs = append(specs, sp)
						}
					}
					if len(specs) > 0 {
						d.Specs = specs
						decls = append(decls, d)
					}
					continue
				}
				var specs []ast.Spec
				for _, sp := range d.Specs {
					if keep[sp] {
						specs = append(specs, sp)
					}
				}
				if len(specs) > 0 {
					d.Specs = specs
					decls = append(decls, d)
				}
			}
		}
		f.Decls, f.Comments = decls, nil
		var buf bytes.Buffer
		if err := format.Node(&buf, fsets[name], f); err != nil {
			return nil, fmt.Errorf("trimming %s: %w", name, err)
		}
		path := filepath.Join(tmp, fmt.Sprintf("trim%d_test.go", i))
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
		out[filepath.Join(dir, name)] = path
	}
	return out, nil
}

// importUsed reports whether a trimmed file still names an import's
// package. A blank or dot import, or a path whose last element is not the
// package's name for sure (a version suffix, a dot or dash), is kept.
func importUsed(sp *ast.ImportSpec, live map[string]bool) bool {
	path, err := strconv.Unquote(sp.Path.Value)
	if err != nil {
		return true
	}
	name := path[strings.LastIndex(path, "/")+1:]
	if sp.Name != nil {
		name = sp.Name.Name
	}
	if name == "_" || name == "." || strings.ContainsAny(name, ".-") || regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
		return true
	}
	return live[name]
}

// test compiles each tested package's test binary (with the overlay, if
// any; its path without ".json" names the binaries) and runs them in turn
// from their package's directory, as go test does, until one fails.
// Compiling has its own, generous limit; each run has timeout as the
// binary's -test.timeout, so a deadlock prints the tests still running and
// fails, and a hard limit a little beyond it kills the process group. It
// returns the outcome, the output and how long the runs took.
func test(c config, overlay string, timeout time.Duration) (outcome, string, time.Duration) {
	var total time.Duration
	var logs strings.Builder
	for n, pkg := range c.tests {
		bin := fmt.Sprintf("%s-%d.test", strings.TrimSuffix(overlay, ".json"), n)
		o, log, ran := testOne(c, pkg, overlay, bin, timeout)
		total += ran
		logs.WriteString(log)
		if o != survived {
			return o, logs.String(), total
		}
	}
	return survived, logs.String(), total
}

func testOne(c config, pkg, overlay, bin string, timeout time.Duration) (outcome, string, time.Duration) {
	parent := c.ctx
	if parent == nil {
		parent = context.Background()
	}
	args := []string{"test", "-c", "-o", bin, "-vet=off"}
	if strings.HasSuffix(overlay, ".json") {
		args = append(args, "-overlay="+overlay)
	}
	args = append(args, pkg)
	bctx, bcancel := context.WithTimeout(parent, buildLimit)
	defer bcancel()
	build := exec.CommandContext(bctx, "go", args...)
	build.Dir = c.root
	build.Env = testEnv()
	out, err := build.CombinedOutput()
	if err != nil {
		if bctx.Err() != nil {
			return timedOut, "building the test binary: " + bctx.Err().Error() + "\n" + string(out), 0
		}
		return notViable, string(out), 0
	}
	if _, err := os.Stat(bin); err != nil {
		// go test -c writes nothing for a package without test files.
		return survived, "", 0
	}
	defer os.Remove(bin)

	targs := []string{"-test.count=1", "-test.failfast", "-test.timeout=" + timeout.String()}
	if c.skip != "" {
		targs = append(targs, "-test.skip="+c.skip)
	}
	ctx, cancel := context.WithTimeout(parent, timeout+timeout/2+5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, targs...)
	cmd.Dir = c.dirs[pkg]
	cmd.Env = testEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	ran := time.Since(start)
	log := buf.String()
	switch {
	case err == nil:
		return survived, log, ran
	case ctx.Err() != nil, strings.Contains(log, "panic: test timed out"):
		return timedOut, log, ran
	default:
		return killed, log, ran
	}
}

// testEnv is the environment without the variables that would make
// integration tests run (or fail for want of Azurite) or long tests start.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TABLEKIT_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runningTests picks out of a timed-out run's output the tests go test
// named as still running ("running tests:" and the indented names after
// it), or says that the build or the process was stopped before it could.
func runningTests(log string) string {
	_, after, ok := strings.Cut(log, "running tests:\n")
	if !ok {
		return "running: (none named: the limit struck while compiling, or the process group was killed)"
	}
	var names []string
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		names = append(names, strings.TrimSpace(line))
	}
	return "running: " + strings.Join(names, ", ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(s, "\n", "\n      ")
}

// collect lists the mutants of one file.
func collect(abs, rel string) ([]mutant, error) {
	src, err := os.ReadFile(abs)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, abs, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	tf := fset.File(f.Pos())
	lines := strings.Split(string(src), "\n")
	var out []mutant
	fn := ""
	add := func(pos, end token.Pos, kind, repl string) {
		s, e := tf.Offset(pos), tf.Offset(end)
		p := fset.Position(pos)
		out = append(out, mutant{
			file: rel, abs: abs, line: p.Line, col: p.Column, fn: fn, kind: kind,
			orig: string(src[s:e]), repl: repl, start: s, end: e,
			context: strings.TrimSpace(lines[p.Line-1]),
		})
	}
	// A comparison is flipped to its boundary neighbour and to its
	// negation (< to <= and to >=): the faults a test of the boundary and a
	// test of the condition catch. The full cross product adds little.
	flips := map[token.Token][]string{
		token.LSS: {"<=", ">="},
		token.LEQ: {"<", ">"},
		token.GTR: {">=", "<="},
		token.GEQ: {">", "<"},
		token.EQL: {"!="},
		token.NEQ: {"=="},
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			name := n.Name.Name
			if n.Recv != nil && len(n.Recv.List) == 1 {
				name = recvName(n.Recv.List[0].Type) + "." + name
			}
			if n.Body == nil {
				return false
			}
			prev := fn
			fn = name
			ast.Inspect(n.Body, visit)
			fn = prev
			return false
		case *ast.GenDecl:
			// Package-level constants and variables: literals only.
			if n.Tok == token.IMPORT {
				return false
			}
		case *ast.BinaryExpr:
			for _, r := range flips[n.Op] {
				add(n.OpPos, n.OpPos+token.Pos(len(n.Op.String())), "comparison", r)
			}
			switch n.Op {
			case token.LAND:
				add(n.OpPos, n.OpPos+2, "logical", "||")
			case token.LOR:
				add(n.OpPos, n.OpPos+2, "logical", "&&")
			}
		case *ast.IfStmt:
			add(n.Cond.Pos(), n.Cond.End(), "negate", "!("+exprText(src, tf, n.Cond)+")")
			if isErrCheck(n.Cond) && endsInReturn(n.Body) {
				add(n.Body.Lbrace, n.Body.Rbrace+1, "error-return", "{}")
			}
		case *ast.ForStmt:
			if n.Cond != nil {
				add(n.Cond.Pos(), n.Cond.End(), "negate", "!("+exprText(src, tf, n.Cond)+")")
			}
		case *ast.BasicLit:
			if n.Kind == token.INT {
				if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
					add(n.Pos(), n.End(), "literal", strconv.FormatInt(v+1, 10))
					add(n.Pos(), n.End(), "literal", strconv.FormatInt(v-1, 10))
				}
			}
		case *ast.ExprStmt:
			if _, ok := n.X.(*ast.CallExpr); ok && fn != "" {
				if !isPanic(n.X) {
					add(n.Pos(), n.End(), "remove", "_ = 0")
				}
			}
		case *ast.IncDecStmt:
			if fn != "" {
				add(n.Pos(), n.End(), "remove", "_ = 0")
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	// The same change twice on one line (two "0x10000" literals) is told
	// apart by its rank, in source order.
	slices.SortStableFunc(out, func(a, b mutant) int { return cmp.Compare(a.start, b.start) })
	seen := map[string]int{}
	for i := range out {
		k := out[i].key()
		seen[k]++
		out[i].nth = seen[k]
	}
	return out, nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

func exprText(src []byte, tf *token.File, e ast.Expr) string {
	return string(src[tf.Offset(e.Pos()):tf.Offset(e.End())])
}

// isErrCheck reports whether cond is `err != nil` for some variable whose
// name says it holds an error.
func isErrCheck(cond ast.Expr) bool {
	b, ok := cond.(*ast.BinaryExpr)
	if !ok || b.Op != token.NEQ {
		return false
	}
	id, ok := b.X.(*ast.Ident)
	nilY, ok2 := b.Y.(*ast.Ident)
	return ok && ok2 && nilY.Name == "nil" && (id.Name == "err" || strings.HasSuffix(id.Name, "Err") || strings.HasSuffix(id.Name, "err"))
}

func endsInReturn(b *ast.BlockStmt) bool {
	if len(b.List) == 0 {
		return false
	}
	_, ok := b.List[len(b.List)-1].(*ast.ReturnStmt)
	return ok
}

// isPanic: removing a panic of an impossible case only changes what an
// impossible input does.
func isPanic(e ast.Expr) bool {
	call := e.(*ast.CallExpr)
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "panic"
}
