package keys

import (
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// MaxKeyUTF16 is the longest PartitionKey or RowKey: 1 KiB of UTF-16, 512
// code units ("Understanding the Table service data model").
const MaxKeyUTF16 = keyrules.MaxKeyUTF16

// Classes of error. Every *ValidationError matches exactly one of these with
// errors.Is, and also the sentinel of the rule it broke.
var (
	// ErrInvalidKey: a PartitionKey, RowKey or key component was refused.
	ErrInvalidKey = keyrules.ErrInvalidKey
	// ErrInvalidName: a table, queue, container, blob or property name was refused.
	ErrInvalidName = keyrules.ErrInvalidName
)

// Rules. A *ValidationError's Rule is one of these.
var (
	ErrEmpty         = keyrules.ErrEmpty
	ErrTooLong       = keyrules.ErrTooLong
	ErrTooShort      = keyrules.ErrTooShort
	ErrForbiddenChar = keyrules.ErrForbiddenChar
	ErrControlChar   = keyrules.ErrControlChar
	ErrInvalidUTF8   = keyrules.ErrInvalidUTF8
	ErrBadSyntax     = keyrules.ErrBadSyntax
	ErrReserved      = keyrules.ErrReserved
	ErrOutOfRange    = keyrules.ErrOutOfRange
)

// ValidationError says which value broke which rule, and where: What
// ("PartitionKey", "RowKey", "table name", "key component", ...), Value
// (the refused value), Rule (ErrTooLong, ErrForbiddenChar, ...), Pos (the
// byte offset of the offending character, or -1), Char (that character
// when Pos >= 0) and Detail (the limit or pattern, in words). errors.Is
// matches its class (ErrInvalidKey or ErrInvalidName) and its Rule.
type ValidationError = keyrules.ValidationError

// Compound joins and splits compound keys with a fixed separator, its Sep
// field ("_" when empty, as in the guide's "000123_2012": employee id, then
// year). Join builds a key from its components, Split and SplitN take one
// apart, Prefix builds the key prefix of leading components. A component
// that contains the separator is refused (ErrInvalidKey) rather than
// silently producing a key that splits differently; use EncodeTuple for
// components that may contain anything.
type Compound = keyrules.Compound

// Period is the span one table covers in the high-volume delete pattern.
// Its Start method gives the UTC start of the period that contains an
// instant, Next the start of the following one.
type Period = keyrules.Period

// The periods a table can cover.
const (
	Hourly  = keyrules.Hourly
	Daily   = keyrules.Daily
	Monthly = keyrules.Monthly
)

// EncodeTuple encodes components into one order-preserving key. It fails only
// when the result would exceed the service's key length. The key of a
// tuple's first components starts every key of a tuple that starts with
// them: read by leading components with a RowKey prefix query
// (table.RowPrefix).
func EncodeTuple(components ...string) (string, error) {
	return keyrules.EncodeTuple(components...)
}

// DecodeTuple inverts EncodeTuple.
func DecodeTuple(key string) ([]string, error) { return keyrules.DecodeTuple(key) }

// FixedUint formats n as exactly width zero-padded digits (the guide's
// "000123"), failing when n does not fit. width is 1 to 20.
func FixedUint(n uint64, width int) (string, error) { return keyrules.FixedUint(n, width) }

// ParseFixedUint inverts FixedUint.
func ParseFixedUint(s string, width int) (uint64, error) { return keyrules.ParseFixedUint(s, width) }

// Int64 formats n in 20 characters such that string order equals numeric
// order, negatives included: "0" and 19 digits for n >= 0, "-" and the 19
// digits of n + 2^63 for n < 0 ('-' sorts before '0').
func Int64(n int64) string { return keyrules.Int64(n) }

// ParseInt64 inverts Int64.
func ParseInt64(s string) (int64, error) { return keyrules.ParseInt64(s) }

// Ticks formats t as .NET's string.Format("{0:D19}", t.ToUniversalTime().Ticks):
// ascending, oldest first. Instants .NET cannot hold are clamped to
// 0001-01-01 and 9999-12-31T23:59:59.9999999Z.
func Ticks(t time.Time) string { return keyrules.Ticks(t) }

// ParseTicks inverts Ticks.
func ParseTicks(s string) (time.Time, error) { return keyrules.ParseTicks(s) }

// InvertedTicks formats t as .NET's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.ToUniversalTime().Ticks),
// the guide's log-tail RowKey: newest first. Go and .NET writers produce the
// same keys. Instants .NET cannot hold are clamped as by Ticks.
func InvertedTicks(t time.Time) string { return keyrules.InvertedTicks(t) }

// ParseInvertedTicks inverts InvertedTicks; only the first 19 characters are
// read when s carries a suffix after "_" (a log tail's keys do).
func ParseInvertedTicks(s string) (time.Time, error) { return keyrules.ParseInvertedTicks(s) }

// PeriodTable names the table that holds period p's data at t: prefix, then
// the UTC period start as digits (yyyyMM, yyyyMMdd or yyyyMMddHH), then, for
// generation g > 0, "g" and three digits. Names of one prefix and period sort
// by time and then generation. A deleted table's name stays unusable for a
// while (409 TableBeingDeleted), so a period's table that must be recreated
// takes the next generation instead of its old name.
func PeriodTable(prefix string, p Period, t time.Time, generation int) (string, error) {
	return keyrules.PeriodTable(prefix, p, t, generation)
}
