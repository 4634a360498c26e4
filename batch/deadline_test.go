package batch_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// Deadlines of the tests that wait on a Writer's goroutines. A Writer whose
// senders or input loop deadlock would otherwise block until go test's
// 10-minute timeout; with these the run fails within the deadline, naming
// the test and showing where every goroutine waits. They bound a hang, not
// speed: each is many times what the test takes on a loaded two-core
// machine under the race detector.
const (
	writerDeadline = 30 * time.Second
	// heavyDeadline is for the tests that push thousands of operations
	// through the memory bound (up to 80 s measured under -race with the
	// machine shared).
	heavyDeadline = 5 * time.Minute
)

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
