package batch

import (
	"cmp"
	"slices"
)

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
// Each transaction is configured by opts (nil: the defaults), as
// NewTransaction(opts) would be.
func Plan(ops []Op, opts *TransactionOptions) ([]*Transaction, error) {
	p := newPlanner(opts)
	byPK := map[string][]*Transaction{}
	var order []string // partitions in order of first appearance
	for i, op := range ops {
		closed, err := p.add(op)
		if err != nil {
			err.Index = i
			return nil, err
		}
		if _, seen := byPK[op.PartitionKey()]; !seen {
			order = append(order, op.PartitionKey())
			byPK[op.PartitionKey()] = nil
		}
		if closed != nil {
			byPK[closed.PartitionKey()] = append(byPK[closed.PartitionKey()], closed)
		}
	}
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
	txOpts *TransactionOptions     // each transaction's, from Plan
	open   map[string]*Transaction // the transaction being filled, per partition
	opened map[string]uint64       // when each open transaction was opened, for flushOpen's order
	next   uint64
	wire   *wirePaths // shared by the planned transactions: one probe per client
	bytes  int        // Size of the open transactions, envelopes included
	ops    int        // operations in the open transactions
}

func newPlanner(opts *TransactionOptions) *planner {
	return &planner{txOpts: opts, open: map[string]*Transaction{}, opened: map[string]uint64{}, wire: &wirePaths{}}
}

// add places op; it returns the transaction that op's arrival closed, if
// any, which the planner forgets: the caller owns it.
func (p *planner) add(op Op) (*Transaction, *OpError) {
	e, err := p.encode(op)
	if err != nil {
		return nil, err
	}
	return p.place(e)
}

// encode encodes op and checks it can ever be sent.
func (p *planner) encode(op Op) (*encoded, *OpError) {
	e, err := encodeOp(op)
	if err != nil {
		return nil, &OpError{Kind: op.Kind, PartitionKey: op.PartitionKey(), RowKey: op.RowKey(), Err: err}
	}
	if e.size+envelope > MaxRequestBytes {
		return nil, &OpError{Kind: op.Kind, PartitionKey: e.pk, RowKey: e.rk, Err: ErrTooLarge}
	}
	return e, nil
}

// cost is what placing e adds to p.bytes at most: its size, and a new
// transaction's envelope unless e joins its partition's open one.
func (p *planner) cost(e *encoded) int {
	if tx := p.open[e.pk]; tx != nil && tx.Len() < MaxOperations && tx.fits(e) == nil {
		return e.size
	}
	return e.size + envelope
}

// place adds an encoded operation to its partition's open transaction,
// closing that one first when e does not fit; it returns the closed one.
func (p *planner) place(e *encoded) (*Transaction, *OpError) {
	tx := p.open[e.pk]
	var closed *Transaction
	if tx != nil && (tx.Len() >= MaxOperations || tx.fits(e) != nil) {
		closed = tx
		p.bytes -= tx.Size()
		p.ops -= tx.Len()
		tx = nil
	}
	if tx == nil {
		tx = NewTransaction(p.txOpts)
		tx.wire = p.wire
		p.open[e.pk] = tx
		p.opened[e.pk] = p.next
		p.next++
		// p.bytes is the sum of the open transactions' Size, envelope
		// included: closing one subtracts its whole Size. Counting only
		// the operations let the count drift down by an envelope per
		// closed transaction, and the memory bound with it.
		p.bytes += tx.Size()
	}
	if err := tx.append(e); err != nil {
		return closed, err.(*OpError)
	}
	p.bytes += e.size
	p.ops++
	return closed, nil
}

// closeLargest closes open transactions, largest first, until at least
// free bytes and n transactions are closed or none is left open, and
// returns them (the caller owns them). One pass over the open partitions
// serves the whole amount, so that input spread over very many partitions
// does not pay a scan per operation.
func (p *planner) closeLargest(free, n int) []*Transaction {
	if len(p.open) == 0 {
		return nil
	}
	all := make([]*Transaction, 0, len(p.open))
	for _, tx := range p.open {
		all = append(all, tx)
	}
	slices.SortFunc(all, func(a, b *Transaction) int { return cmp.Compare(b.Size(), a.Size()) })
	var out []*Transaction
	freed := 0
	for _, tx := range all {
		if freed >= free && len(out) >= n {
			break
		}
		delete(p.open, tx.PartitionKey())
		delete(p.opened, tx.PartitionKey())
		p.bytes -= tx.Size()
		p.ops -= tx.Len()
		freed += tx.Size()
		out = append(out, tx)
	}
	return out
}

// flushOpen closes and returns every open transaction, in the order they
// were opened, and forgets them.
func (p *planner) flushOpen() []*Transaction {
	out := make([]*Transaction, 0, len(p.open))
	for _, tx := range p.open {
		if tx.Len() > 0 {
			out = append(out, tx)
		}
	}
	slices.SortFunc(out, func(a, b *Transaction) int {
		return cmp.Compare(p.opened[a.PartitionKey()], p.opened[b.PartitionKey()])
	})
	p.open, p.opened = map[string]*Transaction{}, map[string]uint64{}
	p.bytes, p.ops = 0, 0
	return out
}
