// Command messagestats shows messages per hour as a data series, a year of days as a wide entity.
//
//	go run ./examples/messagestats                    # in memory, no setup
//	go run ./examples/messagestats -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("messagestats") }
