package batch

// WriteOptions configure one Writer.Write; the Writer's own are its
// WriterOptions. There are none yet; pass nil. (Kept out of writer.go,
// whose internals change for performance on their own.)
type WriteOptions struct{}
