// Command tour runs every tablekit building block end to end and prints, for
// each, why the guide recommends it, what it wrote and the requests it cost.
//
//	go run ./examples/tour                      # in memory, no setup
//	go run ./examples/tour -conn "$CONN"        # Azurite or Azure
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
package main

import "github.com/tablekit/tablekit/internal/scenarios"

func main() { scenarios.Main() }
