package patterns

import "time"

// loopDeadline bounds the tests whose code under test loops on the test's
// own goroutine (a repair that goes round its transactions): a loop that
// never ends fails within it, through deadline, with every goroutine's
// stack, under the mutation tool's 45 s floor. It bounds a hang, not
// speed: each such test takes well under a second.
const loopDeadline = 20 * time.Second
