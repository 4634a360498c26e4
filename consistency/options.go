package consistency

// WriteOptions configure the package's methods that write and have no
// knobs of their own: Worker.Run and Drain, Sender.Send and SendAround,
// Mover.Request and RequestValue. It has no fields yet: nil is the only
// value today, and the parameter lets knobs be added without breaking
// callers.
type WriteOptions struct{}
