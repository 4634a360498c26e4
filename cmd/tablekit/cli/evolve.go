package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tablekit/tablekit/patterns"
)

// evolver is what the index evolution commands use of a model: patterns.Model's
// Build, Drop, Pause, Resume and IndexStatus.
type evolver interface {
	Build(ctx context.Context, name string, opts *patterns.WriteOptions) error
	Drop(ctx context.Context, name string, opts *patterns.WriteOptions) error
	Pause(ctx context.Context, name string, opts *patterns.WriteOptions) error
	Resume(ctx context.Context, name string, opts *patterns.WriteOptions) error
	IndexStatus(ctx context.Context, name string, opts *patterns.ReadOptions) (*patterns.IndexProgress, error)
}

// evolveFlags are the flags every evolution command takes: the registered
// model and the name of one of its indexes.
type evolveFlags struct {
	model, name string
}

func (f *evolveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.model, "index", "", "the registered model `name` (required)")
	fs.StringVar(&f.name, "name", "", "the model's index `name` (required)")
}

func (f *evolveFlags) resolve(c *cli, args []string) (evolver, error) {
	if len(args) != 0 {
		return nil, usagef("unexpected arguments %q", args)
	}
	var names []string
	var evo evolver
	for _, r := range c.indexes {
		if r.evo == nil {
			continue
		}
		names = append(names, r.name)
		if r.name == f.model {
			evo = r.evo
		}
	}
	switch {
	case len(names) == 0:
		return nil, usagef("no model is registered in this binary: build your own with package github.com/tablekit/tablekit/cli and cli.Index")
	case f.model == "":
		return nil, usagef("-index is required: one of %s", strings.Join(names, ", "))
	case evo == nil:
		return nil, usagef("-index %q is not a registered model: one of %s", f.model, strings.Join(names, ", "))
	case f.name == "":
		return nil, usagef("-name is required: the index of the model to act on")
	}
	return evo, nil
}

// statusJSON is an index's state and its build's progress, with the
// rate and ETA a watch measures between two samples.
type statusJSON struct {
	Index      string      `json:"index"`
	State      string      `json:"state"`
	Build      string      `json:"build,omitempty"`
	Started    *time.Time  `json:"started,omitempty"`
	Paused     bool        `json:"paused"`
	Planned    bool        `json:"planned"`
	Entities   int64       `json:"entities"`
	Total      int64       `json:"total"`
	RangesDone int         `json:"rangesDone"`
	Ranges     int         `json:"ranges"`
	Rate       float64     `json:"rate"`                 // entities a second (watch)
	ETASeconds *float64    `json:"etaSeconds,omitempty"` // once every range is cut and the rate known
	RangeList  []rangeJSON `json:"rangeList"`
}

type rangeJSON struct {
	ID       string `json:"id"`
	From     string `json:"from"`
	To       string `json:"to"`
	Done     bool   `json:"done"`
	Entities int64  `json:"entities"`
	Total    int64  `json:"total"`
}

func keyText(pk, rk string) string {
	if pk == "" && rk == "" {
		return ""
	}
	return pk + "/" + rk
}

func statusOf(p *patterns.IndexProgress) statusJSON {
	s := statusJSON{Index: p.Index, State: string(p.State), Build: p.Build, Paused: p.Paused, Planned: p.Planned,
		Entities: p.Entities, Total: p.Total, Ranges: len(p.Ranges), RangeList: []rangeJSON{}}
	if s.State == "" {
		s.State = "declared, not built"
	}
	if !p.Started.IsZero() {
		t := p.Started
		s.Started = &t
	}
	for _, r := range p.Ranges {
		if r.Done {
			s.RangesDone++
		}
		s.RangeList = append(s.RangeList, rangeJSON{ID: r.ID, From: keyText(r.FromPK, r.FromRK), To: keyText(r.ToPK, r.ToRK), Done: r.Done, Entities: r.Entities, Total: r.Total})
	}
	return s
}

func (s statusJSON) text(w io.Writer, ranges bool) {
	fmt.Fprintf(w, "%s: %s", s.Index, s.State)
	if s.Paused {
		fmt.Fprint(w, " (paused)")
	}
	if s.Build != "" {
		fmt.Fprintf(w, "  ranges %d/%d", s.RangesDone, s.Ranges)
		if !s.Planned {
			fmt.Fprint(w, " (still cutting)")
		}
		fmt.Fprintf(w, "  entities %d/%d", s.Entities, s.Total)
		if s.Rate > 0 {
			fmt.Fprintf(w, "  %.0f/s", s.Rate)
		}
		if s.ETASeconds != nil {
			fmt.Fprintf(w, "  ETA %s", (time.Duration(*s.ETASeconds) * time.Second).String())
		}
	}
	fmt.Fprintln(w)
	if ranges {
		for _, r := range s.RangeList {
			state := "pending"
			switch {
			case r.Done:
				state = "done"
			case r.Entities > 0:
				state = "running"
			}
			to := r.To
			if to == "" {
				to = "(end)"
			}
			fmt.Fprintf(w, "  %s  %-7s  %d/%d  [%s, %s)\n", r.ID, state, r.Entities, r.Total, r.From, to)
		}
	}
}

// settled reports a state that a watch stops at.
func settled(s patterns.IndexState) bool {
	return s == patterns.IndexActive || s == patterns.IndexDropped || s == ""
}

const evolveUsage = `
The model's workers (a consistency.Worker serving the model's MessageType
with Model.Process) do the work; these commands start it, watch it and
steer it. The model must be registered with cli.Index.`

func evolveCommands() []command {
	act := func(name, summary, usage string, do func(evolver, context.Context, string) error, done string) command {
		return command{
			name: "index " + name, noAccount: true, summary: summary, usage: usage + evolveUsage + `

examples:
  myops index ` + name + ` -index staff -name email`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var f evolveFlags
				f.register(fs)
				return func(ctx context.Context, c *cli, args []string) error {
					evo, err := f.resolve(c, args)
					if err != nil {
						return err
					}
					if err := do(evo, ctx, f.name); err != nil {
						return err
					}
					p, err := evo.IndexStatus(ctx, f.name, nil)
					if err != nil {
						return err
					}
					s := statusOf(p)
					c.emit(s, func(w io.Writer) {
						fmt.Fprintf(w, "%s: ", done)
						s.text(w, false)
					})
					return nil
				}
			},
		}
	}
	return []command{
		act("build", "build an index of a live model: writes maintain it, workers fill in the past",
			`
Build marks the index building (every write maintains it; reads of it are
refused until it is active) and sends the planner that cuts the table into
ranges. Watch it with index status -watch.`,
			func(e evolver, ctx context.Context, n string) error { return e.Build(ctx, n, nil) }, "build started"),
		act("drop", "drop an index of a live model: writes stop maintaining it, workers delete its rows",
			`
Drop marks the index dropping (writes stop maintaining it; reads of it are
refused) and sends the planner of the ranges that delete its rows.`,
			func(e evolver, ctx context.Context, n string) error { return e.Drop(ctx, n, nil) }, "drop started"),
		act("pause", "pause a running build or drop (its ranges wait)",
			`
Pause keeps the ranges of the index's build or drop waiting until index
resume; writes go on maintaining (or not) the index as before.`,
			func(e evolver, ctx context.Context, n string) error { return e.Pause(ctx, n, nil) }, "paused"),
		act("resume", "resume a paused build or drop",
			`
Resume lets the ranges of a paused build or drop go on.`,
			func(e evolver, ctx context.Context, n string) error { return e.Resume(ctx, n, nil) }, "resumed"),
		{
			name: "index status", noAccount: true,
			summary: "an index's state and its build's or drop's progress (-watch: until it ends)",
			usage: `
Status prints the index's state and, while a build or drop runs, its ranges
done and cut, entities done, and with -watch the rate and the ETA measured
between samples, once every -every until the index is active or dropped
(with -json one object a sample). -ranges lists each range's state.` + evolveUsage + `

examples:
  myops index status -index staff -name email -ranges
  myops index status -index staff -name email -watch -every 10s -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var f evolveFlags
				f.register(fs)
				watch := fs.Bool("watch", false, "sample until the index is active or dropped")
				every := fs.Duration("every", 5*time.Second, "the watch's `interval`")
				ranges := fs.Bool("ranges", false, "list every range")
				return func(ctx context.Context, c *cli, args []string) error {
					evo, err := f.resolve(c, args)
					if err != nil {
						return err
					}
					if *every <= 0 {
						return usagef("-every must be positive")
					}
					var prev *statusJSON
					var prevAt time.Time
					for {
						p, err := evo.IndexStatus(ctx, f.name, nil)
						if err != nil {
							return err
						}
						s, now := statusOf(p), time.Now()
						if prev != nil && prev.Build == s.Build {
							if dt := now.Sub(prevAt).Seconds(); dt > 0 {
								s.Rate = float64(s.Entities-prev.Entities) / dt
							}
							if s.Planned && s.Rate > 0 {
								eta := float64(s.Total-s.Entities) / s.Rate
								s.ETASeconds = &eta
							}
						}
						c.emit(s, func(w io.Writer) { s.text(w, *ranges) })
						if !*watch || settled(p.State) {
							return nil
						}
						prev, prevAt = &s, now
						select {
						case <-ctx.Done():
							return ctx.Err()
						case <-time.After(*every):
						}
					}
				}
			},
		},
	}
}
