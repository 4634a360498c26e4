package patterns

import (
	"context"
	"github.com/tablekit/tablekit/internal/tableio"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/table"
)

// EventualIndexEntities keeps an IDList (index entities elsewhere, or
// blobs) eventually consistent with a table of entities: Notify enqueues
// keys and the value the entity had; Handle reads the entity and makes the
// lists match it (its ID in its current value's list, out of the old one).
// The window of inconsistency is the queue's latency; after the queue
// drains, every list holds exactly the entities with that value.
type eventualIndexEntities[T any] struct {
	tbl     *table.Table[T]
	primary string // the primaries' RowKey prefix within a Model; "" alone
	list    idList
	value   func(*T) string
	sender  *consistency.Sender
	delay   time.Duration
	msgType string
	badName error // a Name that makes no message type, refused by Write
}

// EventualIndexEntitiesOptions configure newEventualIndexEntities. nil
// means the defaults.
type eventualIndexEntitiesOptions struct {
	// PublishDelay hides a change's message until Write has run the write
	// (Write then shows it at once); after a crash in between, or when the
	// SDK retried the enqueue after a lost response, a message appears
	// when the delay ends. Default: 30 s.
	PublishDelay time.Duration
	// Name names the index in its message type
	// ("tablekit.listindex.<Name>.v1", see MessageType), so several indexes
	// can share one queue and one worker; letters, digits, "_", "-" and
	// ".". An invalid Name makes Write fail with ErrBadDefinition before
	// any request. Default: "", and the type is "tablekit.listindex.v1".
	Name string
}

// newEventualIndexEntities indexes the entities of tbl by value into list.
func newEventualIndexEntities[T any](tbl *table.Table[T], value func(*T) string, list idList, sender *consistency.Sender, opts *eventualIndexEntitiesOptions) *eventualIndexEntities[T] {
	e := &eventualIndexEntities[T]{tbl: tbl, list: list, value: value, sender: sender, delay: defaultPublishDelay}
	var name string
	if opts != nil {
		if opts.PublishDelay > 0 {
			e.delay = opts.PublishDelay
		}
		name = opts.Name
	}
	e.msgType, e.badName = messageType("tablekit.listindex", name)
	return e
}

// defaultPublishDelay is the default time a change's message stays hidden if the
// process dies between writing the entity and showing the message.
const defaultPublishDelay = 30 * time.Second

// Verify reads the entities of opts.Partition (every one when it is "")
// and the lists, and reports each entity missing from its value's list
// (Missing), each listed ID whose entity is gone or has another value
// (Orphans) and each ID listed twice (Stale); IndexIssue.Primary is the ID
// and Copy the value. Rows that an index of this package wrote into the
// entities' table (copies, index entities) are not entities and are left
// alone. A partition's Verify judges the listed IDs of that partition.
// Lists of values that no entity has are found when the list can
// enumerate its values (RemoteIndexEntities); a BlobIndex, whose port
// cannot list blobs, is checked for the values the entities have.
func (e *eventualIndexEntities[T]) Verify(ctx context.Context, opts *VerifyOptions) (*IndexReport, error) {
	if err := checkVerifyOptions(opEventualIndexEntitiesVerify, opts); err != nil {
		return nil, err
	}
	r := newReport(e, "EventualIndexEntities("+e.msgType+")", opts)
	want := map[string][]string{}
	err := scanPartitions(ctx, e.tbl.Entities(), opts, func(pk string, rows []*table.Entity) error {
		for _, row := range rows {
			if isIndexRow(row) || !strings.HasPrefix(row.RowKey, e.primary) {
				continue // an index's row, or a row of another kind
			}
			v, err := tableio.For(e.tbl).FromStored(ctx, row)
			if err != nil {
				return err
			}
			r.Primaries++
			if value := e.value(v); value != "" {
				want[value] = append(want[value], ownerRef(row.PartitionKey, row.RowKey))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	inScope := func(id string) bool {
		pk, _, _ := ownerKeys(id)
		return r.Partition == "" || pk == r.Partition
	}
	var have map[string][]string
	if l, ok := e.list.(interface {
		lists(context.Context) (map[string][]string, error)
	}); ok {
		var err error
		if have, err = l.lists(ctx); err != nil {
			return nil, err
		}
	} else {
		have = map[string][]string{}
		for value := range want {
			ids, err := e.list.IDs(ctx, value, nil)
			if err != nil {
				return nil, err
			}
			have[value] = ids
		}
	}
	for _, value := range slices.Sorted(maps.Keys(have)) {
		wanted := map[string]bool{}
		for _, id := range want[value] {
			wanted[id] = true
		}
		listed := map[string]bool{}
		for _, id := range have[value] {
			if !inScope(id) {
				continue
			}
			r.Copies++
			issue := IndexIssue{Index: r.Index, Primary: id, Copy: value}
			switch {
			case listed[id]:
				r.Stale = append(r.Stale, issue)
			case !wanted[id]:
				r.Orphans = append(r.Orphans, issue)
			}
			listed[id] = true
		}
	}
	for _, value := range slices.Sorted(maps.Keys(want)) {
		for _, id := range want[value] {
			if !slices.Contains(have[value], id) {
				r.Missing = append(r.Missing, IndexIssue{Index: r.Index, Primary: id, Copy: value})
			}
		}
	}
	return r, nil
}

// Repair fixes what Verify found, one list change at a time (each
// guarded by its list's ETag): a missing ID is added; an orphan is removed
// after a read of its entity confirms it still lacks the value (a change
// since Verify is left to the queue); a duplicate is removed once.
// opts.Progress, when set, is called per issue fixed; PerTransaction does
// not apply (each list change is its own request).
func (e *eventualIndexEntities[T]) Repair(ctx context.Context, r *IndexReport, opts *RepairOptions) (sum RepairSummary, err error) {
	if err := checkReport(opEventualIndexEntitiesRepair, e, r); err != nil {
		return sum, err
	}
	if err := checkRepairOptions(opEventualIndexEntitiesRepair, opts); err != nil {
		return sum, err
	}
	total := len(r.Missing) + len(r.Orphans) + len(r.Stale)
	done := 0
	step := func() {
		done++
		if opts != nil && opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	for _, is := range r.Missing {
		if err := e.list.Add(ctx, is.Copy, is.Primary, nil); err != nil {
			return sum, err
		}
		sum.Written++
		step()
	}
	for _, is := range r.Orphans {
		if pk, rk, ok := ownerKeys(is.Primary); ok {
			v, err := e.tbl.Get(ctx, pk, rk, nil)
			if err != nil && !table.Is(err, table.ErrNotFound) {
				return sum, err
			}
			if err == nil && e.value(v) == is.Copy {
				step() // it has the value again: not an orphan any more
				continue
			}
		}
		if err := e.list.Remove(ctx, is.Copy, is.Primary, nil); err != nil {
			return sum, err
		}
		sum.Deleted++
		step()
	}
	for _, is := range r.Stale {
		if err := e.list.Remove(ctx, is.Copy, is.Primary, nil); err != nil {
			return sum, err
		}
		sum.Deleted++
		step()
	}
	return sum, nil
}
