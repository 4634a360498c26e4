package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/patterns"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Registration is an entity model or a large entity under the name the
// command line uses for it: Index and Large make one, and
// Options.Registrations takes both.
type Registration struct {
	name  string
	idx   verifier     // made by Index
	evo   evolver      // made by Index: the model's index evolution
	large *largeEntity // made by Large
}

// verifier is what the index commands use of a model: its Verify and its
// Repair (of one partition, or of the whole table), each streaming the
// issues it finds.
type verifier interface {
	Verify(ctx context.Context, opts *patterns.VerifyOptions) (patterns.VerifySummary, error)
	Repair(ctx context.Context, opts *patterns.RepairOptions) (patterns.RepairSummary, error)
}

// Index registers the entity model m as -index name for Main's index
// commands, which verify and repair every index m declares. m reads and
// writes through the clients the program built it with, so the index
// commands take no -conn or -account: they refuse them rather than seem to
// honour them.
func Index[T any](name string, m *patterns.Model[T]) Registration {
	r := indexOf(name, m)
	r.evo = m
	return r
}

// indexOf registers v as -index name.
func indexOf(name string, v verifier) Registration {
	return Registration{name: name, idx: v}
}

// indexFlags are the flags both index commands share.
type indexFlags struct {
	index      string
	partitions []string
	file       string
}

func (f *indexFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.index, "index", "", "the registered index `name` (required)")
	fs.Func("partition", "a PartitionKey to check (repeatable; default: the whole table, one scan)", func(s string) error {
		f.partitions = append(f.partitions, s)
		return nil
	})
	fs.StringVar(&f.file, "partitions", "", "a `file` of PartitionKeys, one a line (- for stdin)")
}

// resolve checks the flags: the index and the partitions, in order, once each.
// No partitions means the whole table: one partitionless Verify, which
// also finds the index rows of partitions no primary is in.
func (f *indexFlags) resolve(c *cli, args []string) (verifier, []string, error) {
	if len(args) != 0 {
		return nil, nil, usagef("unexpected arguments %q", args)
	}
	if len(c.indexes) == 0 {
		return nil, nil, usagef("no index is registered in this binary: tablekit cannot know your Go index definitions; build your own with package github.com/tablekit/tablekit/cli and cli.Index")
	}
	var idx verifier
	var names []string
	for _, r := range c.indexes {
		names = append(names, r.name)
		if r.name == f.index {
			idx = r.idx
		}
	}
	if f.index == "" {
		return nil, nil, usagef("-index is required: one of %s", strings.Join(names, ", "))
	}
	if idx == nil {
		return nil, nil, usagef("-index %q is not registered: one of %s", f.index, strings.Join(names, ", "))
	}
	parts := slices.Clone(f.partitions)
	if f.file != "" {
		var r io.Reader = os.Stdin
		if f.file != "-" {
			fh, err := os.Open(f.file)
			if err != nil {
				return nil, nil, usagef("-partitions: %v", err)
			}
			defer fh.Close()
			r = fh
		}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if l := strings.TrimRight(sc.Text(), "\r"); l != "" {
				parts = append(parts, l)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, nil, usagef("-partitions: %v", err)
		}
	}
	if f.file != "" && len(parts) == 0 {
		return nil, nil, usagef("-partitions %s names no partition", f.file)
	}
	if len(parts) == 0 {
		return idx, []string{""}, nil // the whole table
	}
	seen := map[string]bool{}
	out := parts[:0]
	for _, p := range parts {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return idx, out, nil
}

// issueLine is one -json line of an issue, written as it is found.
type issueLine struct {
	Partition string    `json:"partition"`
	Issue     issueJSON `json:"issue"`
}

// issueJSON is a patterns.IndexIssue with the CLI's key casing.
type issueJSON struct {
	Kind                patterns.IssueKind `json:"kind"`
	Index               string             `json:"index"`
	PartitionKey        string             `json:"partitionKey"`
	PrimaryPartitionKey string             `json:"primaryPartitionKey"`
	Primary             string             `json:"primary"`
	Copy                string             `json:"copy"`
}

// summaryLine is the -json line that ends a scope (a partition, or the
// whole table, Partition ""): what was read and found, and what a repair
// did (-yes) or would do (its dry run).
type summaryLine struct {
	Partition string       `json:"partition"`
	Summary   *summaryJSON `json:"summary,omitempty"`
	Repair    *repairJSON  `json:"repair,omitempty"`
	Skipped   bool         `json:"skipped,omitempty"` // done by an earlier run (-checkpoint)
	Error     string       `json:"error,omitempty"`
}

// summaryJSON is a patterns.VerifySummary with the CLI's key casing.
type summaryJSON struct {
	Primaries int `json:"primaries"`
	IndexRows int `json:"indexRows"`
	Missing   int `json:"missing"`
	Orphans   int `json:"orphans"`
	Stale     int `json:"stale"`
}

// repairJSON is what a repair of one scope wrote and deleted.
type repairJSON struct {
	DryRun       bool `json:"dryRun"`
	Transactions int  `json:"transactions"`
	Written      int  `json:"written"`
	Deleted      int  `json:"deleted"`
}

func summaryOf(s patterns.VerifySummary) *summaryJSON {
	return &summaryJSON{Primaries: s.Primaries, IndexRows: s.IndexRows, Missing: s.Missing, Orphans: s.Orphans, Stale: s.Stale}
}

// issueWriter writes each issue of scope p as it is found: a -json line,
// or a text line whose verb says what a repair does with it (verbs nil:
// none, a verify).
func (c *cli) issueWriter(p string, verbs map[patterns.IssueKind]string) func(patterns.IndexIssue) error {
	return func(is patterns.IndexIssue) error {
		if c.flags.json {
			return json.NewEncoder(c.out).Encode(issueLine{Partition: p, Issue: issueJSON{Kind: is.Kind, Index: is.Index, PartitionKey: is.PartitionKey,
				PrimaryPartitionKey: is.PrimaryPartitionKey, Primary: is.Primary, Copy: is.Copy}})
		}
		verb := ""
		if v := verbs[is.Kind]; v != "" {
			verb = v + " "
		}
		owner := ""
		if is.Primary != "" {
			owner = fmt.Sprintf(" (of %s/%s)", is.PrimaryPartitionKey, is.Primary)
		}
		_, err := fmt.Fprintf(c.out, "%s: %s%s %s row %s/%s%s\n", scopeName(p), verb, is.Kind, is.Index, is.PartitionKey, is.Copy, owner)
		return err
	}
}

// endScope writes the line that ends a scope.
func (c *cli) endScope(l summaryLine) {
	if c.flags.json {
		_ = json.NewEncoder(c.out).Encode(l)
		return
	}
	name := scopeName(l.Partition)
	switch {
	case l.Skipped:
		fmt.Fprintf(c.out, "%s: skipped (done in an earlier run, -checkpoint)\n", name)
		return
	case l.Error != "":
		fmt.Fprintf(c.out, "%s: FAILED: %s\n", name, l.Error)
	}
	if s := l.Summary; s != nil {
		fmt.Fprintf(c.out, "%s: %d primaries, %d index rows; %d missing, %d orphans, %d stale\n", name, s.Primaries, s.IndexRows, s.Missing, s.Orphans, s.Stale)
	}
	if r := l.Repair; r != nil {
		if r.DryRun {
			fmt.Fprintf(c.out, "%s: would write %d and delete %d\n", name, r.Written, r.Deleted)
		} else {
			fmt.Fprintf(c.out, "%s: repaired: %d written, %d deleted in %d transactions\n", name, r.Written, r.Deleted, r.Transactions)
		}
	}
}

// progress is a bar with ETA over the partitions when stderr is a
// terminal and the output is not JSON; otherwise it does nothing.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func (c *cli) progress(ctx context.Context, what string, total int) *progress {
	f, ok := c.errOut.(*os.File)
	if !ok || c.flags.json {
		return &progress{}
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return &progress{}
	}
	p := mpb.NewWithContext(ctx, mpb.WithOutput(f), mpb.WithWidth(40))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name(what+" "), decor.CountersNoUnit("%d/%d partitions")),
		mpb.AppendDecorators(decor.Percentage(), decor.Name(" ETA "), decor.EwmaETA(decor.ET_STYLE_GO, 30)),
	)
	return &progress{p: p, bar: bar}
}

func (p *progress) step(start time.Time) {
	if p.bar != nil {
		p.bar.EwmaIncrement(time.Since(start))
	}
}

func (p *progress) done() {
	if p.p != nil {
		p.bar.Abort(false)
		p.p.Wait()
	}
}

// checkpoint is the file of partitions an earlier repair finished, one
// JSON string a line, appended as each finishes.
type checkpoint struct {
	done map[string]bool
	f    *os.File
}

func openCheckpoint(path string) (*checkpoint, error) {
	cp := &checkpoint{done: map[string]bool{}}
	if path == "" {
		return cp, nil
	}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			var p string
			if l == "" {
				continue
			}
			if err := json.Unmarshal([]byte(l), &p); err != nil {
				// A torn last line (a crash mid-write) is not done.
				continue
			}
			cp.done[p] = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cp.f = f
	return cp, nil
}

func (cp *checkpoint) mark(p string) error {
	cp.done[p] = true
	if cp.f == nil {
		return nil
	}
	b, _ := json.Marshal(p)
	_, err := cp.f.Write(append(b, '\n'))
	return err
}

func (cp *checkpoint) close() {
	if cp.f != nil {
		_ = cp.f.Close()
	}
}

const indexNoneRegistered = `
cmd/tablekit registers no index: it cannot know your Go index
definitions. Build your own operator binary with package
github.com/tablekit/tablekit/cli:

  os.Exit(cli.Main(ctx, os.Args[1:], &cli.Options{
      Registrations: []cli.Registration{cli.Index("emails", emailIndex)},
  }))

The index reads and writes through the clients your program built it
with: -conn and -account are refused here.`

// scopeName is how text output names a verified scope.
func scopeName(p string) string {
	if p == "" {
		return "(whole table)"
	}
	return p
}

func indexCommands() []command {
	return []command{
		{
			name:      "index verify",
			noAccount: true,
			summary:   "compare the primaries with their index rows (exit 3 when they disagree)",
			usage: `
Verify reads; nothing is written. Without -partition it verifies the whole
table, which also finds index rows whose primary's partition holds no
primary at all; with -partition it verifies each partition named, and
finds everything for that partition that the whole-table verify finds.
Each issue is written as it is found, a line each (with -json, a JSON
line {"partition", "issue"}); each scope ends with its summary line
(-json: {"partition", "summary"}). Memory stays bounded by a range of the
table, whatever its size (see patterns.Model.Verify).

Exit codes: 0 the index agrees with its primaries; 3 it does not (see
the output; index repair fixes it); 1 a verify failed; 2 usage.` + indexNoneRegistered + `

examples:
  myops index verify -index emails
  myops index verify -index emails -partition Sales -partition HR
  myops index verify -index emails -partitions departments.txt -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var f indexFlags
				f.register(fs)
				return func(ctx context.Context, c *cli, args []string) error {
					idx, parts, err := f.resolve(c, args)
					if err != nil {
						return err
					}
					bar := c.progress(ctx, "verify", len(parts))
					bad := false
					for _, p := range parts {
						start := time.Now()
						sum, err := idx.Verify(ctx, &patterns.VerifyOptions{Partition: p, Issue: c.issueWriter(p, nil)})
						bar.step(start)
						if err != nil {
							bar.done()
							c.endScope(summaryLine{Partition: p, Error: err.Error()})
							return fmt.Errorf("%s: %w", scopeName(p), err)
						}
						c.endScope(summaryLine{Partition: p, Summary: summaryOf(sum)})
						bad = bad || !sum.OK()
					}
					bar.done()
					if bad {
						return errFindings
					}
					return nil
				}
			},
		},
		{
			name:      "index repair",
			noAccount: true,
			summary:   "list what would make the index agree with its primaries; with -yes, do it",
			usage: `
Each scope (the whole table, or each -partition) is verified and the
repair it needs is listed as it is found: every missing or stale index
row to write and every orphan to delete, then the scope's summary line.
Nothing is changed without -yes. With -yes each range is repaired as soon
as it is verified, in transactions of up to 100 operations, each guarded
so that a concurrent change fails its repair instead of writing stale
data (run again); each issue is listed as it is repaired and the summary
line says what was written and deleted. -json writes JSON lines, as
index verify does, the summary line with its "repair". With -checkpoint
F, every repaired scope is appended to F and a rerun skips those in it.

Exit codes: 0 the dry run listed, or the repair finished; 1 a verify or
repair failed; 2 usage.` + indexNoneRegistered + `

examples:
  myops index repair -index emails -partition Sales
  myops index repair -index emails -partition Sales -yes
  myops index repair -index emails -partitions departments.txt -checkpoint repair.ckpt -yes
  myops -stats index repair -index emails -yes -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var f indexFlags
				f.register(fs)
				ckpt := fs.String("checkpoint", "", "a `file` recording repaired scopes; a rerun skips them (with -yes)")
				yes := fs.Bool("yes", false, "repair: write and delete what the dry run lists")
				return func(ctx context.Context, c *cli, args []string) error {
					idx, parts, err := f.resolve(c, args)
					if err != nil {
						return err
					}
					if *ckpt != "" && !*yes {
						return usagef("-checkpoint records repairs: it needs -yes")
					}
					cp, err := openCheckpoint(*ckpt)
					if err != nil {
						return usagef("-checkpoint: %v", err)
					}
					defer cp.close()
					bar := c.progress(ctx, "repair", len(parts))
					var errs []error
					for _, p := range parts {
						start := time.Now()
						if cp.done[p] {
							c.endScope(summaryLine{Partition: p, Skipped: true})
							bar.step(start)
							continue
						}
						res, err := c.repairOne(ctx, idx, p, *yes)
						if err == nil && *yes {
							err = cp.mark(p)
						}
						if err != nil {
							res.Error = err.Error()
							errs = append(errs, fmt.Errorf("%s: %w", scopeName(p), err))
						}
						c.endScope(res)
						bar.step(start)
						if ctx.Err() != nil {
							break
						}
					}
					bar.done()
					if !*yes {
						fmt.Fprintf(c.errOut, "dry run: nothing was changed; add -yes to repair\n")
					}
					return errors.Join(errs...)
				}
			},
		},
	}
}

// repairOne repairs the scope p (act) or lists what a repair would do:
// each issue is written as it is found, each missing or stale row a write,
// each orphan a delete.
func (c *cli) repairOne(ctx context.Context, idx verifier, p string, act bool) (summaryLine, error) {
	res := summaryLine{Partition: p}
	if !act {
		sum, err := idx.Verify(ctx, &patterns.VerifyOptions{Partition: p, Issue: c.issueWriter(p, map[patterns.IssueKind]string{
			patterns.IssueMissing: "write", patterns.IssueStale: "write", patterns.IssueOrphan: "delete"})})
		res.Summary = summaryOf(sum)
		if err == nil && !sum.OK() {
			res.Repair = &repairJSON{DryRun: true, Written: sum.Missing + sum.Stale, Deleted: sum.Orphans}
		}
		return res, err
	}
	sum, err := idx.Repair(ctx, &patterns.RepairOptions{VerifyOptions: patterns.VerifyOptions{Partition: p, Issue: c.issueWriter(p, map[patterns.IssueKind]string{
		patterns.IssueMissing: "repair", patterns.IssueStale: "repair", patterns.IssueOrphan: "repair"})}})
	res.Summary = summaryOf(sum.VerifySummary)
	if !sum.OK() {
		res.Repair = &repairJSON{Transactions: sum.Transactions, Written: sum.Written, Deleted: sum.Deleted}
	}
	return res, err
}
