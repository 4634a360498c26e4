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

// verifier is what the index commands use of a model: one Verify (of one
// partition, or of the whole table) and the Repair of its report.
type verifier interface {
	Verify(ctx context.Context, opts *patterns.VerifyOptions) (*patterns.IndexReport, error)
	Repair(ctx context.Context, r *patterns.IndexReport, opts *patterns.RepairOptions) (patterns.RepairSummary, error)
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

// partitionResult is one verified scope's line of output: a partition,
// or the whole table (Partition "", shown as "(whole table)").
type partitionResult struct {
	Partition string      `json:"partition"`
	Primaries int         `json:"primaries"`
	Copies    int         `json:"copies"`
	Missing   []issueJSON `json:"missing"`
	Orphans   []issueJSON `json:"orphans"`
	Stale     []issueJSON `json:"stale"`
	// Repair is what a repair did (-yes) or would do (its dry run).
	Repair  *repairJSON `json:"repair,omitempty"`
	Skipped bool        `json:"skipped,omitempty"` // done by an earlier run (-checkpoint)
	Error   string      `json:"error,omitempty"`
}

// issueJSON is a patterns.IndexIssue with the CLI's key casing.
type issueJSON struct {
	Index        string `json:"index"`
	PartitionKey string `json:"partitionKey"`
	Primary      string `json:"primary"`
	Copy         string `json:"copy"`
}

// repairJSON is what a repair of one scope wrote and deleted.
type repairJSON struct {
	DryRun       bool `json:"dryRun"`
	Transactions int  `json:"transactions"`
	Written      int  `json:"written"`
	Deleted      int  `json:"deleted"`
}

func issues(in []patterns.IndexIssue) []issueJSON {
	out := []issueJSON{}
	for _, i := range in {
		out = append(out, issueJSON{Index: i.Index, PartitionKey: i.PartitionKey, Primary: i.Primary, Copy: i.Copy})
	}
	return out
}

func resultOf(p string, r *patterns.IndexReport) partitionResult {
	return partitionResult{Partition: p, Primaries: r.Primaries, Copies: r.Copies, Missing: issues(r.Missing), Orphans: issues(r.Orphans), Stale: issues(r.Stale)}
}

func emptyResult(p string) partitionResult {
	return partitionResult{Partition: p, Missing: []issueJSON{}, Orphans: []issueJSON{}, Stale: []issueJSON{}}
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
table in one scan, which also finds index rows whose primary's partition
holds no primary at all; with -partition it verifies each partition named,
and finds everything for that partition that the whole-table verify finds.

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
					var results []partitionResult
					bad := false
					for _, p := range parts {
						start := time.Now()
						r, err := idx.Verify(ctx, &patterns.VerifyOptions{Partition: p})
						bar.step(start)
						if err != nil {
							bar.done()
							return fmt.Errorf("%s: %w", scopeName(p), err)
						}
						results = append(results, resultOf(p, r))
						bad = bad || !r.OK()
					}
					bar.done()
					c.emitIndex(results)
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
repair it needs is listed: every missing or stale index row to write and
every orphan to delete. Nothing is changed without -yes. With -yes the
repair runs in transactions of up to 100 operations, each guarded so that
a concurrent change fails its repair instead of writing stale data (run
again), and the output lists what was written and deleted. With
-checkpoint F, every repaired scope is appended to F and a rerun skips
those in it.

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
					var results []partitionResult
					var errs []error
					for _, p := range parts {
						start := time.Now()
						if cp.done[p] {
							res := emptyResult(p)
							res.Skipped = true
							results = append(results, res)
							bar.step(start)
							continue
						}
						res, err := repairOne(ctx, idx, p, *yes)
						if err == nil && *yes {
							err = cp.mark(p)
						}
						if err != nil {
							res.Error = err.Error()
							errs = append(errs, fmt.Errorf("%s: %w", scopeName(p), err))
						}
						results = append(results, res)
						bar.step(start)
						if ctx.Err() != nil {
							break
						}
					}
					bar.done()
					c.emitIndex(results)
					if !*yes {
						fmt.Fprintf(c.errOut, "dry run: nothing was changed; add -yes to repair\n")
					}
					return errors.Join(errs...)
				}
			},
		},
	}
}

// repairOne verifies the scope p and, with act, repairs what it found.
// Without act the result lists the repair's work: each missing or stale
// row is a write, each orphan a delete.
func repairOne(ctx context.Context, idx verifier, p string, act bool) (partitionResult, error) {
	r, err := idx.Verify(ctx, &patterns.VerifyOptions{Partition: p})
	if err != nil {
		return emptyResult(p), err
	}
	res := resultOf(p, r)
	if r.OK() {
		return res, nil
	}
	if !act {
		res.Repair = &repairJSON{DryRun: true, Written: len(r.Missing) + len(r.Stale), Deleted: len(r.Orphans)}
		return res, nil
	}
	sum, err := idx.Repair(ctx, r, nil)
	res.Repair = &repairJSON{Transactions: sum.Transactions, Written: sum.Written, Deleted: sum.Deleted}
	return res, err
}

func (c *cli) emitIndex(results []partitionResult) {
	if results == nil {
		results = []partitionResult{}
	}
	c.emit(indexOutput{Partitions: results}, func(w io.Writer) {
		for _, r := range results {
			name := scopeName(r.Partition)
			switch {
			case r.Skipped:
				fmt.Fprintf(w, "%s: skipped (done in an earlier run, -checkpoint)\n", name)
				continue
			case r.Error != "":
				fmt.Fprintf(w, "%s: FAILED: %s\n", name, r.Error)
			}
			fmt.Fprintf(w, "%s: %d primaries, %d copies; %d missing, %d orphans, %d stale\n", name, r.Primaries, r.Copies, len(r.Missing), len(r.Orphans), len(r.Stale))
			verb, del := "write", "delete"
			if r.Repair != nil && !r.Repair.DryRun {
				verb, del = "wrote", "deleted"
			}
			if r.Repair != nil {
				for _, i := range r.Missing {
					fmt.Fprintf(w, "  %s missing %s row %s/%s (of %s)\n", verb, i.Index, i.PartitionKey, i.Copy, i.Primary)
				}
				for _, i := range r.Stale {
					fmt.Fprintf(w, "  %s stale %s row %s/%s (of %s)\n", verb, i.Index, i.PartitionKey, i.Copy, i.Primary)
				}
				for _, i := range r.Orphans {
					fmt.Fprintf(w, "  %s orphan %s row %s/%s\n", del, i.Index, i.PartitionKey, i.Copy)
				}
				if r.Repair.DryRun {
					fmt.Fprintf(w, "  would write %d and delete %d\n", r.Repair.Written, r.Repair.Deleted)
				} else {
					fmt.Fprintf(w, "  repaired: %d written, %d deleted in %d transactions\n", r.Repair.Written, r.Repair.Deleted, r.Repair.Transactions)
				}
			}
		}
	})
}

// indexOutput is the -json output of index verify and index repair.
type indexOutput struct {
	Partitions []partitionResult `json:"partitions"`
}
