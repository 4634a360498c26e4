// Command employees shows employees indexed by email within the partition (one EGT) and across partitions (a queue).
//
//	go run ./examples/employees                    # in memory, no setup
//	go run ./examples/employees -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("employees") }
