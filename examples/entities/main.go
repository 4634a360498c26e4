// Command entities shows typed entities: Add, Get, Modify with ETags, and the cheapest query.
//
//	go run ./examples/entities                    # in memory, no setup
//	go run ./examples/entities -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("entities") }
