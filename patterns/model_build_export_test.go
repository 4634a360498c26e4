package patterns

// SetBeforeBackfill makes f run between each range page's read and its
// writes, so a test can put a write in between.
func SetBeforeBackfill[T any](m *Model[T], f func()) { m.beforeBackfill = f }
