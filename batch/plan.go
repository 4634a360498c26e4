package batch

import (
	"github.com/tablekit/tablekit/table"
)

// PlanOptions configure Plan. nil means the defaults.
type PlanOptions struct {
	// Codec encodes typed values. Default: a new Codec.
	Codec *table.Codec
	// MaxOperations caps each transaction, 1 to 100. Default: 100.
	MaxOperations int
}

// Plan splits ops, over any partitions, into valid transactions: grouped by
// PartitionKey in order of first appearance, each at most 100 operations
// and 4 MiB, a RowKey at most once per transaction (a later operation on
// the same RowKey starts a later transaction, so each entity's operations
// keep their order). The same input always gives the same plan.
//
// A plan of several transactions is not atomic as a whole: each
// transaction commits or fails on its own. Run a partition's transactions
// in order (Writer does) to keep per-entity order.
//
// An operation that can never be sent (bad keys, an entity over the limits)
// fails the whole plan with an *OpError whose Index is its position in ops.
func Plan(ops []Op, opts *PlanOptions) ([]*Transaction, error) {
	p := newPlanner(opts)
	byPK := map[string][]*Transaction{}
	for i, op := range ops {
		closed, err := p.add(op)
		if err != nil {
			err.Index = i
			return nil, err
		}
		if closed != nil {
			byPK[closed.PartitionKey()] = append(byPK[closed.PartitionKey()], closed)
		}
	}
	order := p.order
	for _, tx := range p.flushOpen() {
		byPK[tx.PartitionKey()] = append(byPK[tx.PartitionKey()], tx)
	}
	var out []*Transaction
	for _, pk := range order {
		out = append(out, byPK[pk]...)
	}
	return out, nil
}

// planner builds transactions incrementally, per partition.
type planner struct {
	codec  *table.Codec
	maxOps int
	order  []string                // partitions in order of first appearance
	open   map[string]*Transaction // the transaction being filled, per partition
}

func newPlanner(opts *PlanOptions) *planner {
	p := &planner{codec: &table.Codec{}, maxOps: MaxOperations, open: map[string]*Transaction{}}
	if opts != nil {
		if opts.Codec != nil {
			p.codec = opts.Codec
		}
		if opts.MaxOperations > 0 && opts.MaxOperations < MaxOperations {
			p.maxOps = opts.MaxOperations
		}
	}
	return p
}

// add places op; it returns the transaction that op's arrival closed, if
// any, which the planner forgets: the caller owns it.
func (p *planner) add(op Op) (*Transaction, *OpError) {
	e, err := op.encode(p.codec)
	if err != nil {
		return nil, &OpError{Kind: op.Kind, PartitionKey: op.PartitionKey(), RowKey: op.RowKey(), Err: err}
	}
	if e.size+envelope > MaxRequestBytes {
		return nil, &OpError{Kind: op.Kind, PartitionKey: e.pk, RowKey: e.rk, Err: ErrTooLarge}
	}
	tx := p.open[e.pk]
	if tx == nil {
		p.order = append(p.order, e.pk)
	}
	var closed *Transaction
	if tx != nil && (tx.Len() >= p.maxOps || tx.fits(e) != nil) {
		closed = tx
		tx = nil
	}
	if tx == nil {
		tx = NewTransaction(&TransactionOptions{Codec: p.codec})
		p.open[e.pk] = tx
	}
	if err := tx.append(e); err != nil {
		return closed, err.(*OpError)
	}
	return closed, nil
}

// flushOpen closes and returns every open transaction, in order of the
// partitions' first appearance, and forgets them.
func (p *planner) flushOpen() []*Transaction {
	var out []*Transaction
	for _, pk := range p.order {
		if tx := p.open[pk]; tx != nil && tx.Len() > 0 {
			out = append(out, tx)
		}
	}
	p.open, p.order = map[string]*Transaction{}, nil
	return out
}
