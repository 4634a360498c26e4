// Command photo shows an employee photo kept in a blob (large entity).
//
//	go run ./examples/photo                    # in memory, no setup
//	go run ./examples/photo -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("photo") }
