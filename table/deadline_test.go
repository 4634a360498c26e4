package table_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// loopDeadline bounds the tests that drive the JSON scanner through every
// payload shape: a scanner that never leaves a loop would otherwise spin
// until go test's 10-minute timeout. With it the run fails within the
// bound, naming the test, with the stack of the spinning goroutine. It
// bounds a hang, not speed: each test takes milliseconds.
const loopDeadline = 20 * time.Second

// deadline ends the test binary if t has not finished within d. A spinning
// goroutine cannot be stopped, so it panics, with every goroutine's stack
// in the message.
func deadline(t testing.TB, d time.Duration) {
	name := t.Name()
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%s did not finish within %v (an endless loop?); goroutines:\n%s", name, d, buf[:n]))
	})
	t.Cleanup(func() { timer.Stop() })
}
