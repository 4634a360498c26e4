package patterns

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// The operation names this package's spans and errors carry, each
// written once: each is a method a user calls (Type.Method of an exported
// type), never a part of the model's machinery, so an error or a span
// names what the user called.
const (
	opBlobLogFlush           = "BlobLog.Flush"
	opBlobLogRead            = "BlobLog.Read"
	opDataSeriesGet          = "DataSeries.Get"
	opDataSeriesSet          = "DataSeries.Set"
	opDenormalizedUpdate     = "Denormalized.Update"
	opLargeEntityDelete      = "LargeEntity.Delete"
	opLargeEntityGet         = "LargeEntity.Get"
	opLargeEntityGetLazy     = "LargeEntity.GetLazy"
	opLargeEntityModify      = "LargeEntity.Modify"
	opLargeEntityPut         = "LargeEntity.Put"
	opLargeEntitySweep       = "LargeEntity.Sweep"
	opLargeEntityUpdate      = "LargeEntity.Update"
	opLogTailAppend          = "LogTail.Append"
	opLogTailBetween         = "LogTail.Between"
	opLogTailLatest          = "LogTail.Latest"
	opModelAdd               = "Model.Add"
	opModelDelete            = "Model.Delete"
	opModelDeleteValue       = "Model.MoveSource.DeleteValue"
	opModelBuild             = "Model.Build"
	opModelDrop              = "Model.Drop"
	opModelPause             = "Model.Pause"
	opModelResume            = "Model.Resume"
	opModelIndexStatus       = "Model.IndexStatus"
	opModelProcess           = "Model.Process"
	opModelProcessBatch      = "Model.ProcessBatch"
	opModelQuery             = "Model.Query"
	opModelFind              = "Model.Find"
	opModelGet               = "Model.Get"
	opModelIDs               = "Model.IDs"
	opModelLookup            = "Model.Lookup"
	opModelLookupEntities    = "Model.LookupEntities"
	opModelLoad              = "Model.Load"
	opModelModify            = "Model.Modify"
	opModelPrefix            = "Model.Prefix"
	opModelRange             = "Model.Range"
	opModelRepair            = "Model.Repair"
	opModelUpdate            = "Model.Update"
	opModelUpsert            = "Model.Upsert"
	opModelVerify            = "Model.Verify"
	opRollingTablesExpire    = "RollingTables.Expire"
	opRollingTablesPrecreate = "RollingTables.Precreate"
	opRollingTablesQuery     = "RollingTables.Query"
	opRollingTablesTableFor  = "RollingTables.TableFor"
	opShardedAppend          = "Sharded.Append"
	opShardedRead            = "Sharded.Read"
	opWideEntityAdd          = "WideEntity.Add"
	opWideEntityDelete       = "WideEntity.Delete"
	opWideEntityGet          = "WideEntity.Get"
	opWideEntityPut          = "WideEntity.Put"
)

// enter opens the span of op, a method of the model that a user calls, on
// partition ("" for none), with the table handle's tracing provider, and
// returns the context the method runs in and done, which names op in
// *errp (see asCalled) and ends the span. Every public method of Model
// enters this way, so whatever part of the model raised an error, the user
// reads the method they called.
func (m *Model[T]) enter(ctx context.Context, op, partition string) (context.Context, func(*error)) {
	ctx, end := tableio.For(m.tbl).Span(ctx, op, partition, 1)
	return ctx, func(errp *error) {
		*errp = asCalled(op, *errp)
		end(*errp)
	}
}

// namedSeq is seq with each error it yields named by op.
func namedSeq[T any](op string, seq iter.Seq2[*T, error]) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		for v, err := range seq {
			if !yield(v, asCalled(op, err)) {
				return
			}
		}
	}
}

// asCalled is err as the method op returns it: an *table.InputError's Op
// becomes op; any other error is wrapped so that its text starts with
// op (an opError), unless it already does; each error of a join is named
// on its own. errors.Is and errors.As still see every error in the chain.
func asCalled(op string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = asCalled(op, e)
		}
		return errors.Join(out...)
	}
	var ie *table.InputError
	if errors.As(err, &ie) {
		ie.Op = op
	}
	if s := err.Error(); startsWithOp(s, "patterns: "+op) || startsWithOp(s, "table: "+op) {
		return err
	}
	return &opError{op: op, err: err}
}

// opError is an error a part of the model or a lower layer raised inside
// the method op.
type opError struct {
	op  string
	err error
}

// Error names the method, then what went wrong.
func (e *opError) Error() string {
	return "patterns: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "patterns: ")
}

// Unwrap returns the error raised.
func (e *opError) Unwrap() error { return e.err }

// startsWithOp reports whether s starts with prefix, a package's name and
// an op, followed by the end of the op (one of ". :(").
func startsWithOp(s, prefix string) bool {
	return strings.HasPrefix(s, prefix) && len(s) > len(prefix) && strings.IndexByte(". :(", s[len(prefix)]) >= 0
}
