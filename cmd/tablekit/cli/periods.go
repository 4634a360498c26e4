package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// periodFlags are the flags both periods commands share.
type periodFlags struct {
	prefix, period, at string
}

func (p *periodFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.prefix, "prefix", "", "the tables' name `prefix`, as given to patterns.NewRollingTables (required)")
	fs.StringVar(&p.period, "period", "", "hourly, daily or monthly (required)")
	fs.StringVar(&p.at, "at", "", "an RFC 3339 `time` taken as now (default: now)")
}

// rolling checks the flags and opens the RollingTables they name, keeping
// retention(period, now) (nil: the default).
//
// With dry set, the tables' DeleteTable is recorded and not sent.
func (p *periodFlags) rolling(c *cli, args []string, retention func(keys.Period, time.Time) time.Duration, check func(keys.Period, time.Time) error, dry *dryRunTables) (*patterns.RollingTables[table.Entity], error) {
	if len(args) != 0 {
		return nil, usagef("unexpected arguments %q", args)
	}
	if p.prefix == "" {
		return nil, usagef("-prefix is required")
	}
	var period keys.Period
	switch strings.ToLower(p.period) {
	case "hourly":
		period = keys.Hourly
	case "daily":
		period = keys.Daily
	case "monthly":
		period = keys.Monthly
	case "":
		return nil, usagef("-period is required: hourly, daily or monthly")
	default:
		return nil, usagef("-period %q: want hourly, daily or monthly (weekly tables are not a keys.Period)", p.period)
	}
	now := time.Now()
	if p.at != "" {
		t, err := time.Parse(time.RFC3339Nano, p.at)
		if err != nil {
			return nil, usagef("-at: want an RFC 3339 time such as 2026-11-23T10:00:00Z: %v", err)
		}
		now = t
	}
	// A bad prefix is found before the account is opened.
	if _, err := keys.PeriodTable(p.prefix, period, now, 0); err != nil {
		return nil, usagef("-prefix %q: %v", p.prefix, err)
	}
	if check != nil {
		if err := check(period, now); err != nil {
			return nil, err
		}
	}
	a, err := c.open()
	if err != nil {
		return nil, err
	}
	svc, err := a.tables()
	if err != nil {
		return nil, err
	}
	o := &patterns.RollingTablesOptions{Now: func() time.Time { return now }}
	if retention != nil {
		// A zero Retention means the 60-day default, and -keep 1 at a
		// period's first instant asks for exactly zero: the clock and the
		// retention both move 1 ns later, which leaves now-Retention as is.
		later := now.Add(time.Nanosecond)
		o.Now = func() time.Time { return later }
		o.Retention = retention(period, now) + time.Nanosecond
	}
	var ts table.ServiceClient = svc
	if dry != nil {
		dry.ServiceClient = svc
		ts = dry
	}
	return patterns.NewRollingTables[table.Entity](ts, p.prefix, period, o)
}

// dryRunTables lists and reads through the real client and records each
// DeleteTable instead of sending it.
type dryRunTables struct {
	*aztables.ServiceClient
	would []string
}

func (d *dryRunTables) DeleteTable(_ context.Context, name string, _ *aztables.DeleteTableOptions) (aztables.DeleteTableResponse, error) {
	d.would = append(d.would, name)
	return aztables.DeleteTableResponse{}, nil
}

// expireOutput is the -json output of periods expire.
type expireOutput struct {
	DryRun bool `json:"dryRun"`
	// Dropped lists the tables dropped (-yes) or that would be.
	Dropped  []string  `json:"dropped"`
	KeptFrom time.Time `json:"keptFrom"`
}

// precreateOutput is the -json output of periods precreate.
type precreateOutput struct {
	Tables []string `json:"tables"`
}

// back is the start of the period n periods before the one containing t.
func back(p keys.Period, t time.Time, n int) time.Time {
	s := p.Start(t)
	switch p {
	case keys.Hourly:
		return s.Add(-time.Duration(n) * time.Hour)
	case keys.Daily:
		return s.AddDate(0, 0, -n)
	}
	return s.AddDate(0, -n, 0)
}

func periodsCommands() []command {
	return []command{
		{
			name:    "periods expire",
			summary: "list the period tables older than the newest -keep periods; with -yes, drop them (RollingTables.Expire)",
			usage: `

-keep N keeps the current period and the N-1 before it; every older table
of the prefix is listed, and with -yes dropped, one request each after one
to list. Without -yes nothing is dropped. A dropped name stays unusable
for at least 40 s (409 TableBeingDeleted); a write to that period
afterwards takes the next generation's name.

-json: {"dryRun": bool, "dropped": [table, ...], "keptFrom": RFC 3339 time}.
Exit codes: 0 listed or dropped; 1 a request failed; 2 usage.

examples:
  tablekit periods expire -prefix Logins -period daily -keep 60
  tablekit periods expire -prefix Logins -period daily -keep 60 -yes
  tablekit periods expire -prefix Audit -period monthly -keep 13 -yes -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var p periodFlags
				p.register(fs)
				keep := fs.Int("keep", 0, "how many periods to keep, the current one included (required, at least 1)")
				yes := fs.Bool("yes", false, "drop the tables listed")
				return func(ctx context.Context, c *cli, args []string) error {
					if *keep < 1 {
						return usagef("-keep is required and must be at least 1, got %d", *keep)
					}
					// Expire drops a period that ended at or before now-Retention:
					// that cutoff is the start of the oldest period kept.
					var cutoff time.Time
					var dry *dryRunTables
					if !*yes {
						dry = &dryRunTables{}
					}
					r, err := p.rolling(c, args, func(period keys.Period, now time.Time) time.Duration {
						cutoff = back(period, now, *keep-1)
						return now.Sub(cutoff)
					}, nil, dry)
					if err != nil {
						return err
					}
					dropped, err := r.Expire(ctx, nil)
					out := expireOutput{DryRun: !*yes, Dropped: nonNil(dropped), KeptFrom: cutoff}
					c.emit(out, func(w io.Writer) {
						verb := "dropped"
						if out.DryRun {
							verb = "would drop"
						}
						for _, n := range out.Dropped {
							fmt.Fprintf(w, "%s %s\n", verb, n)
						}
						if out.DryRun {
							fmt.Fprintf(w, "%d would be dropped; periods from %s kept; nothing dropped (add -yes to drop)\n", len(out.Dropped), cutoff.Format(time.RFC3339))
							return
						}
						fmt.Fprintf(w, "%d dropped; periods from %s kept\n", len(out.Dropped), cutoff.Format(time.RFC3339))
					})
					return err
				}
			},
		},
		{
			name:    "periods precreate",
			summary: "create the current and the next -ahead periods' tables before their first write (RollingTables.Precreate)",
			usage: `

One request lists the prefix's tables, then one Create Table per period that
has none. A name still being deleted (409 TableBeingDeleted) is refused:
exit 1 with the table's name; run again after a minute. -at may move the
start later, never into a past period: a past period's table may have
been dropped by periods expire, and precreating it would bring it back.

-json: {"tables": [table, ...]}.
Exit codes: 0 the tables are in place; 1 a request failed; 2 usage.

examples:
  tablekit periods precreate -prefix Logins -period daily -ahead 7
  tablekit -stats periods precreate -prefix Audit -period monthly -ahead 2 -json`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				var p periodFlags
				p.register(fs)
				ahead := fs.Int("ahead", 1, "how many periods after the current one (0 up to a year of daily tables)")
				return func(ctx context.Context, c *cli, args []string) error {
					r, err := p.rolling(c, args, nil, func(period keys.Period, at time.Time) error {
						if current := period.Start(time.Now()); at.Before(current) {
							return usagef("-at %s is in a past period (the current one starts %s): precreate makes tables before their first write, and a past period's table may have been dropped by periods expire on purpose", at.Format(time.RFC3339), current.Format(time.RFC3339))
						}
						return nil
					}, nil)
					if err != nil {
						return err
					}
					names, err := r.Precreate(ctx, *ahead, nil)
					if ie := (*table.InputError)(nil); errors.As(err, &ie) && ie.Field == "k" {
						// Refused before any request: a usage error.
						return usagef("-ahead %d: %s", *ahead, ie.Detail)
					}
					names = nonNil(names)
					c.emit(precreateOutput{Tables: names}, func(w io.Writer) {
						for _, n := range names {
							fmt.Fprintf(w, "%s\n", n)
						}
						fmt.Fprintf(w, "%d period tables in place\n", len(names))
					})
					return err
				}
			},
		},
	}
}
