package patterns

import (
	"context"
	"errors"
	"net/http"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// storedAlready settles a transaction that inserted v as its operation 0
// and failed there with 409, when the caller asked for idempotent adds:
// the SDK retried it after its first response was lost, and v is stored
// exactly as sent. One read.
func storedAlready[T any](ctx context.Context, tbl *table.Table[T], v *T, err error, opts *table.AddOptions) bool {
	if opts == nil || !opts.Idempotent {
		return false
	}
	var te *batch.TransactionError
	if !errors.As(err, &te) || te.Index != 0 || te.StatusCode != http.StatusConflict {
		return false
	}
	ok, rerr := tableio.For(tbl).Stored(ctx, v)
	return rerr == nil && ok
}
