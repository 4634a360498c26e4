package patterns

// The options of this package follow one rule (ARCHITECTURE.md, "Option
// types"): a constructor takes <Type>Options; a method with knobs of its own
// takes <Type><Verb>Options; every other method takes ReadOptions when it
// only reads and WriteOptions when it writes. A method whose knobs are
// exactly table's takes table's type (table.AddOptions, table.QueryOptions).
// nil is always the defaults.

// ReadOptions configure the reads of this package that have no knobs of
// their own. It has no fields: nil is the only value, and the parameter
// lets knobs be added without breaking callers.
type ReadOptions struct{}

// WriteOptions configure the writes of this package that have no knobs of
// their own. It has no fields: nil is the only value, and the parameter
// lets knobs be added without breaking callers.
type WriteOptions struct{}
