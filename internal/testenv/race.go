//go:build race

package testenv

// Race reports whether this binary was built with -race.
const Race = true
