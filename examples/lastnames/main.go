// Command lastnames shows index entities: the EmployeeIDs of each last name in a department.
//
//	go run ./examples/lastnames                    # in memory, no setup
//	go run ./examples/lastnames -conn "$CONN"      # Azurite or Azure
//
// It prints each step and the storage requests it cost, and exits non-zero
// on any failure. The connection string may also come from
// TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main("lastnames") }
