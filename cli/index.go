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

// Indexer is what "index verify" and "index repair" need of an index: the
// one Verify and Repair contract every index kind of package patterns and
// the entity model share.
type Indexer = patterns.Verifier

// indexer is an Indexer as the commands use it: one partition at a time.
type indexer interface {
	verify(ctx context.Context, partitionKey string) (*patterns.IndexReport, error)
	Repair(ctx context.Context, r *patterns.IndexReport, opts *patterns.RepairOptions) (patterns.RepairSummary, error)
}

type anyIndexer struct{ Indexer }

func (a anyIndexer) verify(ctx context.Context, pk string) (*patterns.IndexReport, error) {
	return a.Verify(ctx, &patterns.VerifyOptions{Partition: pk})
}

// Registration is an index under the name the command line uses for it.
type Registration struct {
	name string
	idx  indexer
}

// Index registers idx as -index name for Main's index commands:
// cli.Index("emails", idx) for any index of package patterns or a model.
func Index(name string, idx Indexer) Registration {
	return Registration{name: name, idx: anyIndexer{idx}}
}

// indexFlags are the flags both index commands share.
type indexFlags struct {
	index      string
	partitions []string
	file       string
}

func (f *indexFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.index, "index", "", "the registered index `name` (required)")
	fs.Func("partition", "a PartitionKey to check (repeatable)", func(s string) error {
		f.partitions = append(f.partitions, s)
		return nil
	})
	fs.StringVar(&f.file, "partitions", "", "a `file` of PartitionKeys, one a line (- for stdin)")
}

// resolve checks the flags: the index and the partitions, in order, once each.
func (f *indexFlags) resolve(c *cli, args []string) (indexer, []string, error) {
	if len(args) != 0 {
		return nil, nil, usagef("unexpected arguments %q", args)
	}
	if len(c.indexes) == 0 {
		return nil, nil, usagef("no index is registered in this binary: tablekit cannot know your Go index definitions; build your own with package github.com/tablekit/tablekit/cli and cli.Index")
	}
	var idx indexer
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
	if len(parts) == 0 {
		return nil, nil, usagef("give at least one -partition or a -partitions file")
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

// partitionResult is one partition's line of output.
type partitionResult struct {
	Partition string                  `json:"partition"`
	Primaries int                     `json:"primaries"`
	Copies    int                     `json:"copies"`
	Missing   []patterns.IndexIssue   `json:"missing"`
	Orphans   []patterns.IndexIssue   `json:"orphans"`
	Stale     []patterns.IndexIssue   `json:"stale"`
	Repaired  *patterns.RepairSummary `json:"repaired,omitempty"`
	Skipped   bool                    `json:"skipped,omitempty"` // done by an earlier run (-checkpoint)
	Error     string                  `json:"error,omitempty"`
}

func resultOf(p string, r *patterns.IndexReport) partitionResult {
	return partitionResult{Partition: p, Primaries: r.Primaries, Copies: r.Copies, Missing: nonNil(r.Missing), Orphans: nonNil(r.Orphans), Stale: nonNil(r.Stale)}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
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
      Indexes: []cli.Registration{cli.Index("emails", emailIndex)},
  }))`

func indexCommands() []command {
	return []command{
		{
			name:    "index verify",
			summary: "compare each partition's primaries with their index copies (exit 1 when any disagree)",
			usage: `
Verify reads each partition once; nothing is written.` + indexNoneRegistered + `

examples:
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
						r, err := idx.verify(ctx, p)
						bar.step(start)
						if err != nil {
							bar.done()
							return fmt.Errorf("partition %q: %w", p, err)
						}
						results = append(results, resultOf(p, r))
						bad = bad || !r.OK()
					}
					bar.done()
					c.emitIndex(results)
					if bad {
						return errProblemsFound
					}
					return nil
				}
			},
		},
		{
			name:    "index repair",
			summary: "verify each partition and make its index copies agree with the primaries",
			usage: `
Each partition is verified, then repaired in transactions of up to 100
operations, each guarded so that a concurrent change fails its repair
instead of writing stale data (run again). With -checkpoint F, every
finished partition is appended to F and a rerun skips those in it; without
one, a rerun verifies every partition again (one read of the partition
each) and writes only what is still wrong.` + indexNoneRegistered + `

examples:
  myops index repair -index emails -partitions departments.txt -checkpoint repair.ckpt
  myops -stats index repair -index emails -partition Sales -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var f indexFlags
				f.register(fs)
				ckpt := fs.String("checkpoint", "", "a `file` recording finished partitions; a rerun skips them")
				return func(ctx context.Context, c *cli, args []string) error {
					idx, parts, err := f.resolve(c, args)
					if err != nil {
						return err
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
							results = append(results, partitionResult{Partition: p, Skipped: true, Missing: []patterns.IndexIssue{}, Orphans: []patterns.IndexIssue{}, Stale: []patterns.IndexIssue{}})
							bar.step(start)
							continue
						}
						res, err := repairOne(ctx, idx, p)
						if err == nil {
							err = cp.mark(p)
						}
						if err != nil {
							res.Error = err.Error()
							errs = append(errs, fmt.Errorf("partition %q: %w", p, err))
						}
						results = append(results, res)
						bar.step(start)
						if ctx.Err() != nil {
							break
						}
					}
					bar.done()
					c.emitIndex(results)
					return errors.Join(errs...)
				}
			},
		},
	}
}

func repairOne(ctx context.Context, idx indexer, p string) (partitionResult, error) {
	r, err := idx.verify(ctx, p)
	if err != nil {
		return partitionResult{Partition: p, Missing: []patterns.IndexIssue{}, Orphans: []patterns.IndexIssue{}, Stale: []patterns.IndexIssue{}}, err
	}
	res := resultOf(p, r)
	if r.OK() {
		return res, nil
	}
	sum, err := idx.Repair(ctx, r, nil)
	res.Repaired = &sum
	return res, err
}

func (c *cli) emitIndex(results []partitionResult) {
	if results == nil {
		results = []partitionResult{}
	}
	c.emit(map[string]any{"partitions": results}, func(w io.Writer) {
		for _, r := range results {
			switch {
			case r.Skipped:
				fmt.Fprintf(w, "%s: skipped (done in an earlier run, -checkpoint)\n", r.Partition)
				continue
			case r.Error != "":
				fmt.Fprintf(w, "%s: FAILED: %s\n", r.Partition, r.Error)
			}
			fmt.Fprintf(w, "%s: %d primaries, %d copies; %d missing, %d orphans, %d stale", r.Partition, r.Primaries, r.Copies, len(r.Missing), len(r.Orphans), len(r.Stale))
			if r.Repaired != nil {
				fmt.Fprintf(w, "; repaired: %d written, %d deleted in %d transactions", r.Repaired.Written, r.Repaired.Deleted, r.Repaired.Transactions)
			}
			fmt.Fprintln(w)
		}
	})
}
