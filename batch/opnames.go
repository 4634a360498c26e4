package batch

// The operation names this package's spans and errors carry, each
// written once.
const (
	opTransactionSubmit = "Transaction.Submit"
	opWriterWrite       = "Writer.Write"
)
