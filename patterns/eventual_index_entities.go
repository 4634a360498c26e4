package patterns

import (
	"context"
	"github.com/tablekit/tablekit/internal/tableio"
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

// listPager is a list that can hand over every value's list, a page at
// a time, in value order (the parts of a value together): how verify finds
// lists of values no entity has. RemoteIndexEntities can; a BlobIndex,
// whose port cannot list blobs, cannot.
type listPager interface {
	eachList(ctx context.Context, f func(value string, ids []string) error) error
}

// verify checks the lists from both sides, a page at a time, with no set
// of the table in memory. From the entities' side it reads the entities of
// opts.Partition (every one when it is "") page by page and, for each
// page, each distinct value's list (one list read per value per page): an
// entity missing from its value's list is Missing. From the lists' side it
// reads every list (RemoteIndexEntities: its index entities page by page;
// BlobIndex: the list of each value the entities have, once) and, for each
// page of listed IDs, their entities (a point read per distinct ID): an ID
// whose entity is gone or has another value is an Orphan, an ID listed
// twice in a value's list is Stale. IndexIssue.Primary is the entity and
// Copy the value. Memory: a page of rows, the lists of one page's values,
// the IDs of the value whose list is being read, and for a BlobIndex the
// values already checked. Rows that an index of this package wrote into
// the entities' table (copies, index entities) are not entities and are
// left alone. A partition's verify judges the listed IDs of that
// partition.
func (e *eventualIndexEntities[T]) verify(ctx context.Context, opts *VerifyOptions, each func(*verifyRange) error) error {
	name := "remote list(" + e.msgType + ")"
	scope := ""
	if opts != nil {
		scope = opts.Partition
	}
	inScope := func(id string) bool {
		pk, _, _ := ownerKeys(id)
		return scope == "" || pk == scope
	}
	pager, canPage := e.list.(listPager)
	checked := map[string]bool{} // BlobIndex: values whose list was judged
	// judge adds to r the issues of value's listed ids (those in scope).
	var seenValue string
	seen := map[string]bool{}
	judge := func(r *verifyRange, value string, ids []string) error {
		if value != seenValue {
			seenValue, seen = value, map[string]bool{}
		}
		owners := map[string]bool{} // has the value
		for _, id := range ids {
			if !inScope(id) {
				continue
			}
			r.Copies++
			issue := IndexIssue{Index: r.Index, Primary: id, Copy: value}
			if seen[id] {
				issue.Kind = IssueStale
				r.Stale = append(r.Stale, issue)
				continue
			}
			seen[id] = true
			has, ok := owners[id]
			if !ok {
				var err error
				if has, err = e.hasValue(ctx, id, value); err != nil {
					return err
				}
				owners[id] = has
			}
			if !has {
				issue.Kind = IssueOrphan
				r.Orphans = append(r.Orphans, issue)
			}
		}
		return nil
	}
	// The entities' side.
	type primary struct{ id, value string }
	var page []primary
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		r := newRange(e, name, opts)
		lists := map[string]map[string]bool{}
		for _, p := range page {
			r.Primaries++
			if p.value == "" {
				continue
			}
			listed, ok := lists[p.value]
			if !ok {
				ids, err := e.list.IDs(ctx, opModelVerify, p.value)
				if err != nil {
					return err
				}
				listed = map[string]bool{}
				for _, id := range ids {
					listed[id] = true
				}
				lists[p.value] = listed
				if !canPage && !checked[p.value] {
					checked[p.value] = true
					if err := judge(r, p.value, ids); err != nil {
						return err
					}
				}
			}
			if !listed[p.id] {
				r.Missing = append(r.Missing, IndexIssue{Kind: IssueMissing, Index: r.Index, Primary: p.id, Copy: p.value})
			}
		}
		page = page[:0]
		return each(r)
	}
	err := scanPartitions(ctx, e.tbl.Entities(), opts, func(pk string, rows []*table.Entity) error {
		for _, row := range rows {
			if isMarkedRow(row) || !strings.HasPrefix(row.RowKey, e.primary) {
				continue // an index's row, or a row of another kind
			}
			v, err := tableio.For(e.tbl).FromStored(ctx, row)
			if err != nil {
				return err
			}
			if page = append(page, primary{id: ownerRef(row.PartitionKey, row.RowKey), value: e.value(v)}); len(page) == verifyBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if !canPage {
		return nil
	}
	// The lists' side: each part of each value's list is a range.
	seenValue = ""
	return pager.eachList(ctx, func(value string, ids []string) error {
		r := newRange(e, name, opts)
		if err := judge(r, value, ids); err != nil {
			return err
		}
		return each(r)
	})
}

// hasValue reports whether the entity id (an owner reference) exists and
// has value: one point read.
func (e *eventualIndexEntities[T]) hasValue(ctx context.Context, id, value string) (bool, error) {
	pk, rk, ok := ownerKeys(id)
	if !ok || !strings.HasPrefix(rk, e.primary) {
		return false, nil // no primary's reference: not read
	}
	row, err := e.tbl.Entities().Get(ctx, pk, rk, nil)
	if table.Is(err, table.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if isMarkedRow(row) || !strings.HasPrefix(row.RowKey, e.primary) {
		return false, nil
	}
	v, err := tableio.For(e.tbl).FromStored(ctx, row)
	if err != nil {
		return false, err
	}
	return e.value(v) == value, nil
}

// repair fixes what verify found in one range, one list change at a time
// (each guarded by its list's ETag): a missing ID is added; an orphan is
// removed after a read of its entity confirms it still lacks the value (a
// change since verify is left to the queue); a duplicate is removed once.
// PerTransaction does not apply (each list change is its own request).
func (e *eventualIndexEntities[T]) repair(ctx context.Context, r *verifyRange, opts *RepairOptions) (sum RepairSummary, err error) {
	for _, is := range r.Missing {
		if err := e.list.Add(ctx, opModelRepair, is.Copy, is.Primary); err != nil {
			return sum, err
		}
		sum.Written++
	}
	for _, is := range r.Orphans {
		if has, err := e.hasValue(ctx, is.Primary, is.Copy); err != nil {
			return sum, err
		} else if has {
			continue // it has the value again: not an orphan any more
		}
		if err := e.list.Remove(ctx, opModelRepair, is.Copy, is.Primary); err != nil {
			return sum, err
		}
		sum.Deleted++
	}
	for _, is := range r.Stale {
		if err := e.list.Remove(ctx, opModelRepair, is.Copy, is.Primary); err != nil {
			return sum, err
		}
		sum.Deleted++
	}
	return sum, nil
}
