package batch

// WriteOptions configure the writes of this package that have no knobs of
// their own: Writer.Write (the Writer's own are its WriterOptions) and
// Transaction.Submit. There are none yet; pass nil.
type WriteOptions struct{}
