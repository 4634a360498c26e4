package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// Migration moves the partitions whose account changes between two
// Routers, as when an account is added (rendezvous hashing moves only the
// keys the new account wins, about 1/(N+1)). Accounts of the same name in
// both Routers must be the same storage account, and both Routers must
// map keys alike (the same Options.Key). "Adding an account" in the
// package documentation gives the path readers, writers and MoveTable
// follow, and the one change a move cannot see.
type Migration struct {
	from, to *Router
}

// NewMigration prepares the move from the accounts of from to those of to.
func NewMigration(from, to *Router) (*Migration, error) {
	if from == nil || to == nil {
		return nil, fmt.Errorf("%w: a Migration needs both Routers", ErrBadConfig)
	}
	return &Migration{from: from, to: to}, nil
}

// Moved reports whether partitionKey changes account, and its old and new
// accounts.
func (m *Migration) Moved(partitionKey string) (from, to *Account, moved bool) {
	from, to = m.from.For(partitionKey), m.to.For(partitionKey)
	return from, to, from.name != to.name
}

// ReadOrder lists the accounts to read partitionKey from during the move:
// the old one, then the new one when it moves.
func (m *Migration) ReadOrder(partitionKey string) []*Account {
	from, to, moved := m.Moved(partitionKey)
	if !moved {
		return []*Account{from}
	}
	return []*Account{from, to}
}

// ErrChangedDuringMove: an entity changed in its old account while it was
// being moved, so it was not deleted there. Run MoveTable again.
var ErrChangedDuringMove = errors.New("accounts: entity changed during the move")

// MoveSummary counts what MoveTable did.
type MoveSummary struct {
	Partitions int // moved partitions seen
	Copied     int // entities written to their new account
	Deleted    int // entities deleted from their old account
	Changed    int // entities left in the old account: changed during the move
	Requests   int // transactions and settling reads sent (the scans' pages not counted)
}

// MoveTable moves every partition of table name whose account changes. It
// scans the table in each old account (one request per page), and for
// every 100 entities of a moved partition sends two transactions: an
// upsert of the entities (replacing, so a rerun converges) into the new
// account, then their delete from the old one guarded by the ETags read.
// Entities of partitions that do not move are read but never written.
func (m *Migration) MoveTable(ctx context.Context, name string, opts *MoveTableOptions) (MoveSummary, error) {
	var log *slog.Logger
	if opts != nil {
		log = opts.Logger
	}
	var sum MoveSummary
	var errs []error
	for _, a := range m.from.accounts {
		src, err := table.New[table.Entity](a.Table(name), nil)
		if err != nil {
			return sum, err
		}
		var group []*table.Entity
		flush := func() error {
			if len(group) == 0 {
				return nil
			}
			defer func() { group = group[:0] }()
			err := m.move(ctx, a, name, group, &sum)
			if log != nil {
				pk := group[0].PartitionKey
				attrs := []any{"table", name, "partition", pk, "from", a.name, "to", m.to.For(pk).name, "entities", len(group)}
				if err != nil {
					log.WarnContext(ctx, "tablekit: partition not moved", append(attrs, "err", err)...)
				} else {
					log.InfoContext(ctx, "tablekit: partition moved", attrs...)
				}
			}
			return err
		}
		last := ""
		for e, err := range src.Query(ctx, nil) {
			if err != nil {
				return sum, fmt.Errorf("accounts: scanning %q in %q: %w", name, a.name, err)
			}
			if m.to.For(e.PartitionKey).name == a.name {
				continue // stays
			}
			if e.PartitionKey != last || len(group) == batch.MaxOperations {
				if e.PartitionKey != last {
					sum.Partitions++
				}
				if err := flush(); err != nil {
					errs = append(errs, err)
				}
				last = e.PartitionKey
			}
			group = append(group, e)
		}
		if err := flush(); err != nil {
			errs = append(errs, err)
		}
	}
	return sum, errors.Join(errs...)
}

// MoveTableOptions configure MoveTable. nil means the defaults.
type MoveTableOptions struct {
	// Logger receives an info record per group of entities moved (one
	// partition, at most 100 entities: a copy and a delete transaction)
	// and a warning per group that was not, with the table, partition,
	// both accounts and the entity count, so a long move shows its
	// progress. Default: no logging.
	Logger *slog.Logger
}

// move copies group (one partition, at most 100 entities) from account a to
// its new account, then deletes it from a guarded by the ETags read.
func (m *Migration) move(ctx context.Context, a *Account, name string, group []*table.Entity, sum *MoveSummary) error {
	pk := group[0].PartitionKey
	dst := m.to.For(pk)
	copyOps := make([]batch.Op, 0, len(group))
	deleteOps := make([]batch.Op, 0, len(group))
	for _, e := range group {
		c := *e
		c.ETag = ""
		copyOps = append(copyOps, batch.Upsert(&c, aztables.UpdateModeReplace))
		deleteOps = append(deleteOps, batch.Delete(e.PartitionKey, e.RowKey).IfMatch(e.ETag))
	}
	sum.Requests++
	if _, err := batch.Submit(ctx, dst.Table(name), copyOps, nil); err != nil {
		return fmt.Errorf("accounts: copying partition %q to %q: %w", pk, dst.name, err)
	}
	sum.Copied += len(group)
	sum.Requests++
	if _, err := batch.Submit(ctx, a.Table(name), deleteOps, nil); err != nil {
		if table.Is(err, table.ErrNotFound) {
			// The SDK retried a delete whose answer was lost: the retry
			// meets 404 although the first attempt deleted them all.
			sum.Requests++
			if gone, qerr := allGone(ctx, a, name, group); qerr == nil && gone {
				sum.Deleted += len(group)
				return nil
			}
		}
		if table.Is(err, table.ErrPreconditionFailed) {
			sum.Changed += len(group)
			return fmt.Errorf("%w: partition %q in %q (one of %d entities changed; none deleted): %w", ErrChangedDuringMove, pk, a.name, len(group), err)
		}
		return fmt.Errorf("accounts: deleting partition %q from %q: %w", pk, a.name, err)
	}
	sum.Deleted += len(group)
	return nil
}

// allGone reports whether none of group (one partition, in RowKey order)
// is left in account a: one range query.
func allGone(ctx context.Context, a *Account, name string, group []*table.Entity) (bool, error) {
	want := map[string]bool{}
	for _, e := range group {
		want[e.RowKey] = true
	}
	tb, err := table.New[table.Entity](a.Table(name), nil)
	if err != nil {
		return false, err
	}
	f := table.Partition(group[0].PartitionKey).And(table.Prop("RowKey").Ge(group[0].RowKey), table.Prop("RowKey").Le(group[len(group)-1].RowKey))
	for e, err := range tb.Query(ctx, &table.QueryOptions{Filter: f, Select: []string{"RowKey"}}) {
		if err != nil {
			return false, err
		}
		if want[e.RowKey] {
			return false, nil
		}
	}
	return true, nil
}
