package patterns

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// workerDeadline bounds the tests that drain a queue with a
// consistency.Worker, whose handlers run on goroutines of their own: a
// handler that never returns would otherwise block until go test's
// timeout. It bounds a hang, not speed (the tests take well under a second).
const workerDeadline = 30 * time.Second

// deadline ends the test binary if t has not finished within d. A blocked
// goroutine cannot be stopped, so it panics, with every goroutine's stack in
// the message.
func deadline(t testing.TB, d time.Duration) {
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%s did not finish within %v (a deadlock?); goroutines:\n%s", name, d, buf[:n]))
	})
	t.Cleanup(func() { timer.Stop() })
}
