// Command tour runs every tablekit building block end to end and prints, for
// each, why the guide recommends it, the keys it wrote and what it cost.
//
//	go run ./examples/tour                      # in memory, no setup
//	go run ./examples/tour -conn "$CONN"        # Azurite or Azure
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string (default: in-memory fakes; env TABLEKIT_CONNECTION_STRING)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *conn); err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}
