package patterns

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/tableio"
)

// ProcessBatch is the consistency.BatchHandler for MessageType (register
// it with Worker.HandleBatch): it applies several messages as Process
// applies one, in one convergence of all the
// rows they name. The primaries of a partition are read together; the
// cross copies of an index partition are written in shared entity group
// transactions, each copy once (its primary's current state); each
// RemoteLists table is read with one query per 7 values and
// written in the fewest transactions. When that convergence fails, each
// message is applied on its own, as Process applies it, so that a failure
// (a message another writer raced, a list that refuses an ID) stays with
// the messages behind it. Every step is idempotent: a message delivered
// again converges to the same indexes.
func (m *Model[T]) ProcessBatch(ctx context.Context, msgs []*consistency.Message) []error {
	ctx, end := tableio.For(m.tbl).Span(ctx, opModelProcessBatch, "", len(msgs))
	errs := m.processBatch(ctx, msgs)
	for i := range errs {
		errs[i] = asCalled(opModelProcessBatch, errs[i])
	}
	end(errors.Join(errs...))
	return errs
}

func (m *Model[T]) processBatch(ctx context.Context, msgs []*consistency.Message) []error {
	errs := make([]error, len(msgs))
	bodies := make([]modelMessage, len(msgs))
	var live []int
	var rows []modelRow
	for i, msg := range msgs {
		if msg.Type != m.msgType {
			errs[i] = consistency.Permanent(fmt.Errorf("%w: Model.ProcessBatch: a %s message reached the handler of %s", ErrBadDefinition, msg.Type, m.msgType))
			continue
		}
		if err := msg.Decode(&bodies[i]); err != nil {
			errs[i] = err
			continue
		}
		if bodies[i].Build != nil { // a step of a Build or Drop, on its own
			errs[i] = m.processBuild(ctx, bodies[i].Build)
			continue
		}
		live = append(live, i)
		rows = append(rows, bodies[i].Rows...)
	}
	if len(live) == 0 {
		return errs
	}
	err := m.converge(ctx, rows, true)
	if err == nil {
		return errs
	}
	if len(live) == 1 {
		errs[live[0]] = err
		m.warnUnconverged(ctx, "Model.ProcessBatch", len(rows), err)
		return errs
	}
	for _, i := range live {
		if errs[i] = m.converge(ctx, bodies[i].Rows, true); errs[i] != nil {
			m.warnUnconverged(ctx, "Model.ProcessBatch", len(bodies[i].Rows), errs[i])
		}
	}
	return errs
}

// warnUnconverged logs a message's work left to its next delivery.
func (m *Model[T]) warnUnconverged(ctx context.Context, op string, rows int, err error) {
	if m.log != nil {
		m.log.WarnContext(ctx, "tablekit: "+op+" could not converge the indexes; the message returns to the queue", "model", m.name, "rows", rows, "error", redact.Error(err))
	}
}
