// Command expenses shows the ten most recent expense claims of an employee (log tail).
//
//	go run ./examples/expenses                    # in memory, no setup
//	go run ./examples/expenses -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("expenses") }
