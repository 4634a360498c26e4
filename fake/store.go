package fake

import (
	"math"
	"slices"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// rows holds a table's entities by partition: each partition's entities
// sorted by RowKey, and the partitions sorted by PartitionKey, both in the
// service's order (keyrules.Compare). A write searches and moves entities
// within its own partition only, so a table of a million entities over a
// thousand partitions takes a write as cheaply as a table of one
// partition's worth; a partition holds at least one entity.
type rows struct {
	parts map[string]*partition // by PartitionKey
	order []*partition          // sorted by PartitionKey
	n     int                   // entities over all partitions
}

// partition is one partition's entities, sorted by RowKey. Every entity
// shares the partition's pk string.
type partition struct {
	pk   string
	rows []*entity
}

// find is the index in p of rk, or where it would be inserted.
func (p *partition) find(rk string) (int, bool) {
	return slices.BinarySearchFunc(p.rows, rk, func(e *entity, rk string) int { return keyrules.Compare(e.rk, rk) })
}

// partIndex is the index in r.order of pk, or where it would be inserted.
func (r *rows) partIndex(pk string) (int, bool) {
	return slices.BinarySearchFunc(r.order, pk, func(p *partition, pk string) int { return keyrules.Compare(p.pk, pk) })
}

// len is the number of entities.
func (r *rows) len() int { return r.n }

// get is the entity (pk, rk), or nil.
func (r *rows) get(pk, rk string) *entity {
	p := r.parts[pk]
	if p == nil {
		return nil
	}
	if i, ok := p.find(rk); ok {
		return p.rows[i]
	}
	return nil
}

// put stores e in place of the entity of its keys, if any.
func (r *rows) put(e *entity) {
	p := r.parts[e.pk]
	if p == nil {
		if r.parts == nil {
			r.parts = map[string]*partition{}
		}
		p = &partition{pk: e.pk}
		r.parts[e.pk] = p
		i, _ := r.partIndex(e.pk)
		r.order = slices.Insert(r.order, i, p)
	}
	e.pk = p.pk
	i, found := p.find(e.rk)
	if found {
		p.rows[i] = e
		return
	}
	p.rows = slices.Insert(p.rows, i, e)
	r.n++
}

// remove deletes the entity (pk, rk), if stored, and its partition with
// its last entity.
func (r *rows) remove(pk, rk string) {
	p := r.parts[pk]
	if p == nil {
		return
	}
	i, found := p.find(rk)
	if !found {
		return
	}
	p.rows = slices.Delete(p.rows, i, i+1)
	r.n--
	if len(p.rows) == 0 {
		r.dropPartition(pk)
	}
}

// dropPartition deletes partition pk.
func (r *rows) dropPartition(pk string) {
	p := r.parts[pk]
	if p == nil {
		return
	}
	r.n -= len(p.rows)
	delete(r.parts, pk)
	if i, ok := r.partIndex(pk); ok {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// partitionCopy is a rows that holds a copy of partition pk of r and
// nothing else: what an entity group transaction, which writes one
// partition, changes until it commits with adopt.
func (r *rows) partitionCopy(pk string) *rows {
	c := &rows{parts: map[string]*partition{}}
	if p := r.parts[pk]; p != nil {
		cp := &partition{pk: p.pk, rows: slices.Clone(p.rows)}
		c.parts[pk] = cp
		c.order = []*partition{cp}
		c.n = len(cp.rows)
	}
	return c
}

// adopt makes partition pk of r, and any other partition c holds, what c
// holds: the commit of a transaction written to r.partitionCopy(pk).
func (r *rows) adopt(pk string, c *rows) {
	r.dropPartition(pk)
	for _, p := range c.order {
		r.dropPartition(p.pk)
		if r.parts == nil {
			r.parts = map[string]*partition{}
		}
		r.parts[p.pk] = p
		i, _ := r.partIndex(p.pk)
		r.order = slices.Insert(r.order, i, p)
		r.n += len(p.rows)
	}
}

// cursor is a position in rows: an entity, or the end.
type cursor struct {
	part, row int // indexes in rows.order and in that partition's rows
}

// seek is the position of the first entity at or after (pk, rk) in the
// service's order.
func (r *rows) seek(pk, rk string) cursor {
	pi, found := r.partIndex(pk)
	if !found {
		return cursor{part: pi}
	}
	ri, _ := r.order[pi].find(rk)
	if ri == len(r.order[pi].rows) {
		return cursor{part: pi + 1}
	}
	return cursor{part: pi, row: ri}
}

// at is the entity at c, or nil at the end.
func (r *rows) at(c cursor) *entity {
	if c.part >= len(r.order) {
		return nil
	}
	return r.order[c.part].rows[c.row]
}

// next is the position after c, which is not the end.
func (r *rows) next(c cursor) cursor {
	if c.row+1 < len(r.order[c.part].rows) {
		return cursor{part: c.part, row: c.row + 1}
	}
	return cursor{part: c.part + 1}
}

// keyedPage is the page that a scan of partition pk from RowKey from on
// serves for a filter that matches the RowKeys keys (sorted, no repeats)
// and nothing else, found by looking the keys up instead of examining the
// entities between them: the scan's page and continuation, entity for
// entity, which need only where the keys lie in the partition. The scan
// examines each entity from from to the page's end, at scanCost of the
// server's budget apiece. A page ends before the first entity past the
// budget, after limit entities that match and keep admits, or at the
// partition's end; an empty page ends where it begins. next is the entity
// past the budget when the page ran out of it, else the first match after
// the page, if any. clockGone reports the budget spent by the clock; it is
// asked at each match, where the scan asks at each entity, which differs
// only where the clock moves during one request (never in a synctest
// bubble).
func (r *rows) keyedPage(pk, from string, keys []string, limit int, empty bool, scanCost time.Duration,
	clockGone func() bool, keep func(*entity) bool) (page []*entity, next *entity) {
	p := r.parts[pk]
	if p == nil {
		return nil, nil
	}
	start, _ := p.find(from)
	var at []int // where the keys at or after from lie
	for _, k := range keys {
		if i, ok := p.find(k); ok && i >= start {
			at = append(at, i)
		}
	}
	end := len(p.rows)
	budget := math.MaxInt // the first entity past the budget
	if scanCost > 0 {
		budget = start + max(int((serverTimeBudget+scanCost-1)/scanCost), 1)
	}
	stop := start // the page's end
	if !empty {
		full := end // past the limit-th entity kept
		for _, i := range at {
			if full < end {
				break
			}
			if i >= budget || i > start && clockGone() {
				budget = min(budget, i)
				break
			}
			if keep(p.rows[i]) {
				if page = append(page, p.rows[i]); len(page) == limit {
					full = i + 1
				}
			}
		}
		if budget < full && budget < end {
			return page, p.rows[budget]
		}
		stop = min(end, full)
	}
	for _, i := range at {
		if i >= stop {
			return page, p.rows[i]
		}
	}
	return page, nil
}
