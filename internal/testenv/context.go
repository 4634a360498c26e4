package testenv

import "context"

// context0 is for cleanups, which run after the test's context is cancelled.
func context0() context.Context { return context.Background() }
