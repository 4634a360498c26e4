// Command logins shows login attempts in a table per day, expired by dropping tables.
//
//	go run ./examples/logins                    # in memory, no setup
//	go run ./examples/logins -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("logins") }
