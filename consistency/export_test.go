package consistency

// LoopIterations reports how often w's dequeue loop has gone round: the
// tests bound it to prove the loop waits rather than polls.
func LoopIterations(w *Worker) int64 { return w.iterations.Load() }
