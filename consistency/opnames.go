package consistency

// The operation names this package's spans and errors carry, each
// written once.
const (
	opMoverMoveBatches = "Mover.MoveBatches"
	opMoverRequest     = "Mover.Request"
)
