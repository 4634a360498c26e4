// Command departments shows a department with its manager's details, an employee with its reviews, and a cached department table.
//
//	go run ./examples/departments                    # in memory, no setup
//	go run ./examples/departments -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("departments") }
