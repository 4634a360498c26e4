package patterns

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/table"
)

// Errors of the patterns, matched with errors.Is.
var (
	// ErrBadDefinition: an index or pattern was defined in a way that could
	// not work (reported when it is defined, before any request).
	ErrBadDefinition = errors.New("patterns: bad definition")
	// ErrUnknownIndex: a lookup named an index that was not defined.
	ErrUnknownIndex = errors.New("patterns: unknown index")
	// ErrNotUnique: a point lookup was asked of a non-unique index, or
	// (Model.Lookup of a CrossCopies index) of a value that several
	// primaries hold, which the error's message names; Model.Find returns
	// them all.
	ErrNotUnique = errors.New("patterns: index is not unique")
	// ErrNotPrimary: the entity's RowKey does not start with the primary prefix.
	ErrNotPrimary = errors.New("patterns: not a primary RowKey")
)

// ValueTakenError: a unique index already holds the value for another
// entity. The write was refused whole. It is not a lost race, so retry
// loops stop on it; the SDK's *azcore.ResponseError stays in the chain.
type ValueTakenError struct {
	Index        string
	Value        string
	PartitionKey string
	Err          error
}

// Error names the index, the value and the partition, then the service's
// answer.
func (e *ValueTakenError) Error() string {
	msg := "patterns: value " + quote(e.Value) + " of unique index " + e.Index + " is taken in partition " + quote(e.PartitionKey)
	if e.Err != nil {
		msg += ": " + redact.Line(e.Err)
	}
	return msg
}

// Unwrap returns the SDK's error, not a conflict: retry loops stop on it.
func (e *ValueTakenError) Unwrap() error { return e.Err }

func quote(s string) string { return strconv.Quote(s) }

// notFoundError: a pattern's logical entity (a wide entity, say) has none
// of the rows that would hold it. The service answered every request, so
// no *azcore.ResponseError is in the chain; table.Is(err, table.ErrNotFound) reports it.
type notFoundError struct {
	Op           string
	PartitionKey string
	RowKey       string
}

// Error names the operation and the entity.
func (e *notFoundError) Error() string {
	return "patterns: " + e.Op + " (" + quote(e.PartitionKey) + ", " + quote(e.RowKey) + "): not found"
}

// Is makes errors.Is(err, table.ErrNotFound), and so table.Is, true.
func (e *notFoundError) Is(target error) bool { return target == table.ErrNotFound }

// lostRace marks err, the service's answer to a guarded write that another
// writer beat (a blob's 412 or 409, an entity's 404 after it was read), as
// table.ErrLostRace: table.Is(err, table.ErrLostRace) and RetryOnConflict go round again,
// and errors.As still finds the *azcore.ResponseError. what names the
// operation and the item.
func lostRace(what string, err error) error {
	return fmt.Errorf("patterns: %s: %w: %w", what, table.ErrLostRace, redact.Error(err))
}
