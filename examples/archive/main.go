// Command archive shows archiving employee #456 from Current to Archive through a queue.
//
//	go run ./examples/archive                    # in memory, no setup
//	go run ./examples/archive -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("archive") }
