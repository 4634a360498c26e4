package keyrules

import (
	"errors"
	"fmt"
	"strconv"
)

// Classes of error. Every *ValidationError matches exactly one of these with
// errors.Is, and also the sentinel of the rule it broke.
var (
	// ErrInvalidKey: a PartitionKey, RowKey or key component was refused.
	ErrInvalidKey = errors.New("keys: invalid key")
	// ErrInvalidName: a table, queue, container, blob or property name was refused.
	ErrInvalidName = errors.New("keys: invalid name")
)

// Rules. A *ValidationError's Rule is one of these.
var (
	ErrEmpty         = errors.New("empty")
	ErrTooLong       = errors.New("too long")
	ErrTooShort      = errors.New("too short")
	ErrForbiddenChar = errors.New("forbidden character")
	ErrControlChar   = errors.New("control character")
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrBadSyntax     = errors.New("bad syntax")
	ErrReserved      = errors.New("reserved")
	ErrOutOfRange    = errors.New("out of range")
)

// ValidationError says which value broke which rule, and where.
type ValidationError struct {
	What   string // "PartitionKey", "RowKey", "table name", "key component", ...
	Value  string // the refused value
	Rule   error  // ErrTooLong, ErrForbiddenChar, ...
	Pos    int    // byte offset of the offending character, or -1
	Char   rune   // the offending character when Pos >= 0
	Detail string // the limit or pattern, in words
}

// Error says which value broke which rule, and where.
func (e *ValidationError) Error() string {
	v := e.Value
	if len(v) > 48 {
		v = v[:48] + "…"
	}
	msg := "keys: " + e.What + " " + strconv.Quote(v) + ": " + e.Rule.Error()
	if e.Pos >= 0 {
		msg += fmt.Sprintf(" %U at byte %d", e.Char, e.Pos)
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *ValidationError) class() error {
	switch e.What {
	case "PartitionKey", "RowKey", "key component", "key":
		return ErrInvalidKey
	}
	return ErrInvalidName
}

// Unwrap lets errors.Is match both the class and the rule.
func (e *ValidationError) Unwrap() []error { return []error{e.class(), e.Rule} }

func invalid(what, value string, rule error, detail string) *ValidationError {
	return &ValidationError{What: what, Value: value, Rule: rule, Pos: -1, Detail: detail}
}

func invalidAt(what, value string, rule error, pos int, c rune, detail string) *ValidationError {
	return &ValidationError{What: what, Value: value, Rule: rule, Pos: pos, Char: c, Detail: detail}
}
