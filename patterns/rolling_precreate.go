package patterns

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// maxPrecreateAhead bounds Precreate's k: a year of daily tables. It is no
// service limit (an account holds any number of tables) but each period is
// one Create Table request, and a larger k is far more likely a mistake
// (minutes for days) than a plan.
const maxPrecreateAhead = 366

// Precreate creates the tables of the current period (the RollingTables'
// clock, RollingTablesOptions.Now) and of the k periods after it, so that the first write of a new period pays no
// Create Table and never meets a name being deleted: the guide creates a
// period's table ahead of its first write. It lists this prefix's tables
// once, then sends one Create Table per period that has none; periods that
// already have a table (of any generation) are left as they are. It returns
// the table of every period, oldest first, in use from now on by TableFor.
//
// A period whose name is still being deleted (409 TableBeingDeleted) is
// refused rather than given the next generation's name quietly (the
// service answered 409 TableBeingDeleted: table.Is(err,
// table.ErrTableBeingDeleted) holds, and errors.As finds the
// *table.ServiceError naming the table and the *azcore.ResponseError): a table dropped ahead of its period means an
// Expire with a wrong clock or a hand-made drop, which an operator should
// see. The periods before it have been created; rerunning is safe.
//
// Each table created is logged at Debug to the tables' Logger
// (RollingTablesOptions.Table).
//
// k outside 0..366 (a year of daily tables: each period is one request, and a
// larger k is far more likely a mistake than a plan) is refused with a
// *table.InputError (Field "k") before any request.
func (r *RollingTables[T]) Precreate(ctx context.Context, k int, options *WriteOptions) ([]string, error) {
	const op = opRollingTablesPrecreate
	if k < 0 || k > maxPrecreateAhead {
		return nil, &table.InputError{Op: op, Field: "k", Rule: table.ErrValueOutOfRange, Detail: fmt.Sprintf("%d periods ahead; want 0..%d", k, maxPrecreateAhead)}
	}
	ts, err := r.tables(ctx, op)
	if err != nil {
		return nil, err
	}
	// The newest generation of each period is the one in use.
	have := map[time.Time]periodTable{}
	for _, pt := range ts {
		if cur, ok := have[pt.start]; !ok || pt.gen > cur.gen {
			have[pt.start] = pt
		}
	}
	names := make([]string, 0, k+1)
	start := r.period.Start(r.now())
	for i := 0; i <= k; i, start = i+1, r.period.Next(start) {
		name := ""
		if pt, ok := have[start]; ok {
			name = pt.name
		} else {
			if name, err = r.createOnce(ctx, op, start, 0); err != nil {
				return names, err
			}
			if r.tblOpts.Logger != nil {
				r.tblOpts.Logger.DebugContext(ctx, "tablekit: period table created ahead", "table", name, "start", start)
			}
		}
		r.mu.Lock()
		r.known[start] = name
		r.mu.Unlock()
		names = append(names, name)
	}
	return names, nil
}

// createOnce creates generation gen of start's table, one request, and
// refuses a name being deleted instead of moving to the next generation.
func (r *RollingTables[T]) createOnce(ctx context.Context, op string, start time.Time, gen int) (string, error) {
	name, err := keys.PeriodTable(r.prefix, r.period, start, gen)
	if err != nil {
		return "", err
	}
	_, err = r.svc.CreateTable(ctx, name, nil)
	switch {
	case err == nil, table.Is(err, table.ErrAlreadyExists):
		return name, nil
	case table.Is(err, table.ErrTableBeingDeleted):
		// Delete Table: the name stays unusable for "at least 40 seconds".
		return "", fmt.Errorf("patterns: %s: the table of the period from %s is still being deleted; the service frees a deleted name after at least 40 s, so run again later (a write to that period meanwhile takes the next generation's name): %w",
			op, start.Format(time.RFC3339), &table.ServiceError{Op: op + " (create table)", Table: name, Err: err})
	}
	return "", &table.ServiceError{Op: op + " (create table)", Table: name, Err: err}
}
