package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/poisonq"
)

// poisonFlags are the flags every poison command shares.
type poisonFlags struct {
	queue, typ, key string
}

func (p *poisonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.queue, "queue", "", "the poison `queue` (required)")
	fs.StringVar(&p.typ, "type", "", "only messages of this message `type` (for example archive.v1)")
	fs.StringVar(&p.key, "key", "", "only messages with this idempotency `key`")
}

func (p *poisonFlags) check() error {
	if p.queue == "" {
		return usagef("-queue is required")
	}
	if err := keyrules.ValidateQueueName(p.queue); err != nil {
		return usagef("-queue %q: %v", p.queue, err)
	}
	return nil
}

// match is the filter the flags describe; nil when there is none.
func (p *poisonFlags) match() func(*poisonq.Poisoned) bool {
	if p.typ == "" && p.key == "" {
		return nil
	}
	return func(m *poisonq.Poisoned) bool {
		if p.typ != "" && m.Type() != p.typ {
			return false
		}
		if p.key != "" && (m.Record == nil || m.Record.Envelope == nil || m.Record.Envelope.Key != p.key) {
			return false
		}
		return true
	}
}

// poisonQueue opens the poison queue and, when work is named, the work queue.
func (c *cli) poisonQueue(poison, work string) (*poisonq.Queue, error) {
	a, err := c.open()
	if err != nil {
		return nil, err
	}
	pq, err := a.queue(poison)
	if err != nil {
		return nil, err
	}
	var wq consistency.Queue
	if work != "" {
		q, err := a.queue(work)
		if err != nil {
			return nil, err
		}
		wq = q
	}
	return poisonq.New(pq, wq), nil
}

// poisonRow is how list shows a message.
type poisonRow struct {
	ID           string    `json:"id"`
	Type         string    `json:"type,omitempty"`
	Key          string    `json:"key,omitempty"`
	DequeueCount int64     `json:"dequeueCount,omitempty"`
	PoisonedAt   time.Time `json:"poisonedAt,omitzero"`
	Error        string    `json:"error,omitempty"`
	Payload      string    `json:"payload,omitempty"`
	Text         string    `json:"text,omitempty"` // when it is not a worker's record
}

func rowOf(m poisonq.Poisoned) poisonRow {
	r := poisonRow{ID: m.ID}
	if m.Record == nil {
		r.Text = m.Text
		return r
	}
	r.DequeueCount, r.PoisonedAt, r.Error = m.Record.DequeueCount, m.Record.PoisonedAt, m.Record.Error
	if env := m.Record.Envelope; env != nil {
		r.Type, r.Key, r.Payload = env.Type, env.Key, string(env.Payload)
	} else {
		r.Text = m.Record.Raw
	}
	return r
}

func poisonCommands() []command {
	return []command{
		{
			name:    "poison list",
			summary: "show the messages a worker gave up on, decoded",
			usage: `

The service shows at most 32 messages at a time without taking them; the
count is the service's approximate length of the queue.

-json: {"approximateCount": n, "messages": [{"id", "type", "key",
"dequeueCount", "poisonedAt", "error", "payload", "text"}, ...]}.
Exit codes: 0 listed (messages present or not); 1 a request failed; 2 usage.

examples:
  tablekit poison list -queue archive-poison
  tablekit poison list -queue archive-poison -type archive.v1 -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var p poisonFlags
				p.register(fs)
				return func(ctx context.Context, c *cli, args []string) error {
					if err := p.check(); err != nil {
						return err
					}
					if len(args) != 0 {
						return usagef("unexpected arguments %q", args)
					}
					pq, err := c.poisonQueue(p.queue, "")
					if err != nil {
						return err
					}
					peek, err := pq.Peek(ctx, nil)
					if err != nil {
						return err
					}
					rows := []poisonRow{}
					match := p.match()
					for _, m := range peek.Messages {
						if match == nil || match(&m) {
							rows = append(rows, rowOf(m))
						}
					}
					c.emit(map[string]any{"approximateCount": peek.Approximate, "messages": rows}, func(w io.Writer) {
						tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
						fmt.Fprintf(tw, "ID\tTYPE\tKEY\tDEQUEUES\tPOISONED\tERROR\n")
						for _, r := range rows {
							typ := r.Type
							if typ == "" {
								typ = "(not an envelope)"
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, typ, r.Key, r.DequeueCount, r.PoisonedAt.Format(time.RFC3339), oneLine(r.Error, 100))
						}
						_ = tw.Flush()
						fmt.Fprintf(w, "%d shown, about %d in the queue\n", len(rows), peek.Approximate)
					})
					return nil
				}
			},
		},
		{
			name:    "poison replay",
			summary: "put poisoned messages back on the work queue, as first sent, once the cause is fixed",
			usage: `

Each message is sent to the work queue, then deleted from the poison queue;
a crash between the two sends it again next time, which handlers that
converge to the current state make harmless. Messages that do not match
stay where they are. Replay deletes nothing for good, so it needs no -yes;
-dry-run counts without moving anything.

-json: {"dryRun": bool, "replayed": n, "kept": n}.
Exit codes: 0 replayed or counted; 1 a request failed; 2 usage.

examples:
  tablekit poison replay -queue archive-poison -work archive
  tablekit poison replay -queue archive-poison -work archive -type archive.v1 -dry-run`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var p poisonFlags
				p.register(fs)
				work := fs.String("work", "", "the work `queue` the worker reads (required)")
				dry := fs.Bool("dry-run", false, "count what would be replayed; change nothing")
				return func(ctx context.Context, c *cli, args []string) error {
					if err := p.check(); err != nil {
						return err
					}
					if *work == "" {
						return usagef("-work is required")
					}
					if err := keyrules.ValidateQueueName(*work); err != nil {
						return usagef("-work %q: %v", *work, err)
					}
					pq, err := c.poisonQueue(p.queue, *work)
					if err != nil {
						return err
					}
					opts := &poisonq.Options{Match: p.match()}
					var sum poisonq.Summary
					if *dry {
						matched := 0
						want := opts.Match
						opts.Match = func(m *poisonq.Poisoned) bool {
							if want == nil || want(m) {
								matched++
							}
							return false
						}
						if sum, err = pq.Replay(ctx, opts); err != nil {
							return err
						}
						sum = poisonq.Summary{Done: matched, Kept: sum.Kept - matched}
					} else if sum, err = pq.Replay(ctx, opts); err != nil {
						return err
					}
					verb := "replayed"
					if *dry {
						verb = "would replay"
					}
					c.emit(map[string]any{"dryRun": *dry, "replayed": sum.Done, "kept": sum.Kept}, func(w io.Writer) {
						fmt.Fprintf(w, "%s %d, kept %d in %s\n", verb, sum.Done, sum.Kept, p.queue)
					})
					return nil
				}
			},
		},
		{
			name:    "poison purge",
			summary: "list poisoned messages (all, or those matching -type / -key); with -yes, delete them",
			usage: `

Without -yes nothing is deleted: the messages that would be are listed.
With -yes they are deleted and listed. Deleting is final.

-json: {"dryRun": bool, "purged": [{"id", "type", "key", "dequeueCount",
"poisonedAt", "error", "payload", "text"}, ...], "kept": n}.
Exit codes: 0 listed or purged; 1 a request failed; 2 usage.

examples:
  tablekit poison purge -queue archive-poison -type archive.v0
  tablekit poison purge -queue archive-poison -type archive.v0 -yes
  tablekit poison purge -queue archive-poison -yes`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var p poisonFlags
				p.register(fs)
				yes := fs.Bool("yes", false, "delete the messages listed")
				return func(ctx context.Context, c *cli, args []string) error {
					if err := p.check(); err != nil {
						return err
					}
					if len(args) != 0 {
						return usagef("unexpected arguments %q", args)
					}
					pq, err := c.poisonQueue(p.queue, "")
					if err != nil {
						return err
					}
					// Every message goes through Match, so each one purged (or
					// that would be) is listed; without -yes none is taken.
					out := purgeOutput{DryRun: !*yes, Purged: []poisonRow{}}
					want := p.match()
					sum, err := pq.Purge(ctx, &poisonq.Options{Match: func(m *poisonq.Poisoned) bool {
						if want != nil && !want(m) {
							return false
						}
						out.Purged = append(out.Purged, rowOf(*m))
						return *yes
					}})
					out.Kept = sum.Kept
					if out.DryRun {
						out.Kept -= len(out.Purged)
					}
					c.emit(out, func(w io.Writer) {
						verb := "purged"
						if out.DryRun {
							verb = "would purge"
						}
						for _, r := range out.Purged {
							fmt.Fprintf(w, "%s %s %s %s\n", verb, r.ID, r.Type, r.Key)
						}
						if out.DryRun {
							fmt.Fprintf(w, "would purge %d, keep %d in %s; nothing deleted (add -yes to purge)\n", len(out.Purged), out.Kept, p.queue)
							return
						}
						fmt.Fprintf(w, "purged %d, kept %d in %s\n", len(out.Purged), out.Kept, p.queue)
					})
					return err
				}
			},
		},
	}
}

// purgeOutput is the -json output of poison purge.
type purgeOutput struct {
	DryRun bool        `json:"dryRun"`
	Purged []poisonRow `json:"purged"`
	Kept   int         `json:"kept"`
}

// oneLine shortens s to at most n runes on one line, for tables.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}
