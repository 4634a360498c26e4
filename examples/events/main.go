// Command events shows event appends sharded over partitions and merged back in order.
//
//	go run ./examples/events                    # in memory, no setup
//	go run ./examples/events -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("events") }
