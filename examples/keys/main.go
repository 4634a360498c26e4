// Command keys shows the key builders: compound keys, tuples, numbers, inverted ticks, prefixes, shards, period tables.
//
//	go run ./examples/keys                    # in memory, no setup
//	go run ./examples/keys -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("keys") }
