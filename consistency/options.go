package consistency

// ReadOptions configure the package's methods that only read and have no
// knobs of their own (BlobStore.Get). It has no fields yet: nil is the
// only value today, and the parameter lets options be added without
// breaking callers.
type ReadOptions struct{}

// WriteOptions configure the package's methods that write and have no
// knobs of their own: Worker.Run and Drain, Sender.Send and SendAround,
// Mover.Request and RequestValue, BlobStore.Put and Delete. It has no
// fields yet: nil is the only value today.
type WriteOptions struct{}
