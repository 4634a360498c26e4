// Command tablekit inspects and repairs what tablekit's patterns leave in a
// storage account: the worker's poison queue, period tables, and keys that
// need decoding. It is package cli's Main with no indexes registered; to
// verify and repair your own indexes, build a binary of your own that
// registers them (see package cli).
//
//	tablekit keys decode 2519880551999999999
//	tablekit poison list -queue archive-poison
//	tablekit periods precreate -prefix Logins -period daily -ahead 7
//	tablekit -stats periods expire -prefix Logins -period daily -keep 60 -yes
//
// Every subcommand has -help with examples and -json output. Exit codes: 0
// when the command did what was asked (dry runs included), 1 when an
// operation failed, 2 for a usage error or a refused flag, 3 when index
// verify found disagreements. Destructive commands change nothing without
// -yes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablekit/tablekit/cmd/tablekit/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], nil)
	stop()
	os.Exit(code)
}
