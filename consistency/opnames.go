package consistency

// The operation names this package's spans and errors carry, each
// written once.
const (
	opMoverProcessBatch = "Mover.ProcessBatch"
	opMoverRequest      = "Mover.Request"
)
