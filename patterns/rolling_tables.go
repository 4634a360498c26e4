package patterns

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// RollingTables keeps each period's entities in a table of its own (the
// guide's login attempts kept 60 days, a table per day), so expiring a
// period is one request that drops its table instead of deleting every
// entity: the "High volume delete pattern". Writes go to the table of their
// instant's period, created on first use and remembered; queries over a
// time range visit the tables of the periods it covers, oldest first. A
// deleted table's name stays unusable for a while (409 TableBeingDeleted):
// a period whose table must be made again gets the next generation's name
// (keys.PeriodTable), never the deleted one.
type RollingTables[T any] struct {
	svc       table.ServiceClient
	prefix    string
	period    keys.Period
	retention time.Duration
	now       func() time.Time
	tblOpts   table.Options // each period's table's; Name set per table

	mu    sync.Mutex
	known map[time.Time]string // period start -> table in use
}

// RollingTablesOptions configure RollingTables. nil means the defaults.
type RollingTablesOptions struct {
	// Retention is how long a period is kept after it ends. Default: 60
	// days, the guide's login attempts.
	Retention time.Duration
	// Now is the clock of Expire. Default: time.Now.
	Now func() time.Time
	// Table configures every period's table (codec, encryption, logger,
	// tracing) as table.New's options do; its Name is replaced by each
	// table's own. Default: nil, table.New's defaults.
	Table *table.Options
}

// NewRollingTables names tables prefix + period digits. No request is sent.
func NewRollingTables[T any](svc table.ServiceClient, prefix string, period keys.Period, opts *RollingTablesOptions) (*RollingTables[T], error) {
	if _, err := keys.PeriodTable(prefix, period, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 0); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	r := &RollingTables[T]{svc: svc, prefix: prefix, period: period, retention: 60 * 24 * time.Hour, now: time.Now, known: map[time.Time]string{}}
	if opts != nil && opts.Table != nil {
		r.tblOpts = *opts.Table
	}
	// The type and options are checked once here, so a period's table is
	// never refused later.
	if _, err := r.open("probe"); err != nil {
		return nil, err
	}
	if opts != nil {
		if opts.Retention > 0 {
			r.retention = opts.Retention
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
	}
	return r, nil
}

// TableFor returns the table of at's period, creating it on first use (one
// request, then none).
func (r *RollingTables[T]) TableFor(ctx context.Context, at time.Time, options *WriteOptions) (*table.Table[T], error) {
	start := r.period.Start(at)
	r.mu.Lock()
	name, ok := r.known[start]
	r.mu.Unlock()
	if !ok {
		var err error
		if name, err = r.create(ctx, opRollingTablesTableFor, at); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.known[start] = name
		r.mu.Unlock()
	}
	return r.open(name)
}

// open is the typed table called name, configured as Options.Table says.
func (r *RollingTables[T]) open(name string) (*table.Table[T], error) {
	o := r.tblOpts
	o.Name = name
	return table.New[T](r.svc.NewClient(name), &o)
}

func (r *RollingTables[T]) create(ctx context.Context, op string, at time.Time) (string, error) {
	for gen := 0; ; gen++ {
		name, err := keys.PeriodTable(r.prefix, r.period, at, gen)
		if err != nil {
			return "", err
		}
		_, err = r.svc.CreateTable(ctx, name, nil)
		switch {
		case err == nil, table.Is(err, table.ErrAlreadyExists):
			return name, nil
		case table.Is(err, table.ErrTableBeingDeleted):
			continue // recently dropped: take the next generation's name
		}
		return "", &table.ServiceError{Op: op + " (create table)", Table: name, Err: err}
	}
}

// Add inserts v into the table of at's period: one request (two the first
// time a period is used). opts are table.Add's (nil means the defaults);
// Idempotent makes a retry after a lost response succeed.
func (r *RollingTables[T]) Add(ctx context.Context, at time.Time, v *T, opts *table.AddOptions) error {
	t, err := r.TableFor(ctx, at, nil)
	if err != nil {
		return err
	}
	return t.Add(ctx, v, opts)
}

// tables lists this prefix's tables with their periods, oldest first.
func (r *RollingTables[T]) tables(ctx context.Context, op string) ([]periodTable, error) {
	lo, hi := keyrules.PrefixRange(r.prefix)
	f := fmt.Sprintf("TableName ge '%s' and TableName lt '%s'", lo, hi)
	pager := r.svc.NewListTablesPager(&aztables.ListTablesOptions{Filter: &f})
	var out []periodTable
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, &table.ServiceError{Op: op + " (list tables)", Err: err}
		}
		for _, t := range page.Tables {
			if t.Name == nil {
				continue
			}
			start, gen, err := keyrules.ParsePeriodTable(r.prefix, r.period, *t.Name)
			if err != nil {
				continue // another prefix's table that shares ours
			}
			out = append(out, periodTable{name: *t.Name, start: start, gen: gen})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].start.Equal(out[j].start) {
			return out[i].start.Before(out[j].start)
		}
		return out[i].gen < out[j].gen
	})
	return out, nil
}

type periodTable struct {
	name  string
	start time.Time
	gen   int
}

// Query returns the entities of the periods that [from, to) covers that
// opts selects, oldest period first: one request to list the tables, then
// one per page of each table.
func (r *RollingTables[T]) Query(ctx context.Context, from, to time.Time, opts *table.QueryOptions) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		ts, err := r.tables(ctx, opRollingTablesQuery)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, pt := range ts {
			end := r.period.Next(pt.start)
			if !pt.start.Before(to) || !end.After(from) {
				continue
			}
			t, err := r.open(pt.name)
			if err != nil {
				yield(nil, err)
				return
			}
			for v, err := range t.Query(ctx, opts) {
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
}

// Expire drops the tables of periods that ended more than Retention ago:
// one request to list, then one per dropped table. It returns their names.
func (r *RollingTables[T]) Expire(ctx context.Context, options *WriteOptions) ([]string, error) {
	ts, err := r.tables(ctx, opRollingTablesExpire)
	if err != nil {
		return nil, err
	}
	cutoff := r.now().Add(-r.retention)
	var dropped []string
	for _, pt := range ts {
		if r.period.Next(pt.start).After(cutoff) {
			continue
		}
		if _, err := r.svc.DeleteTable(ctx, pt.name, nil); err != nil && !table.Is(err, table.ErrNotFound) {
			return dropped, &table.ServiceError{Op: opRollingTablesExpire + " (delete table)", Table: pt.name, Err: err}
		}
		dropped = append(dropped, pt.name)
		r.mu.Lock()
		for s, n := range r.known {
			if strings.EqualFold(n, pt.name) {
				delete(r.known, s)
			}
		}
		r.mu.Unlock()
	}
	return slices.Clip(dropped), nil
}
