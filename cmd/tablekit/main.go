// Command tablekit inspects and repairs what tablekit's patterns leave in a
// storage account: the worker's poison queue, orphan blobs of large
// entities, period tables, and keys that need decoding.
//
//	tablekit keys decode 2519880551999999999
//	tablekit poison list -queue archive-poison
//	tablekit poison replay -queue archive-poison -work archive -type archive.v1
//	tablekit -stats keys encode -as tuple Sales 000123
//
// It works against a connection string (-conn, or TABLEKIT_CONNECTION_STRING
// or AZURE_STORAGE_CONNECTION_STRING), an account with Microsoft Entra ID
// (-account NAME, through azidentity.DefaultAzureCredential), or Azurite.
// Every subcommand has -help with examples and -json output.
//
// Exit codes: 0 when all is well, 1 when problems were found or an
// operation failed, 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK       = 0
	exitProblems = 1
	exitUsage    = 2
)

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errProblemsFound means the command ran and found something to fix: exit 1
// with no error message beyond the command's own output.
var errProblemsFound = errors.New("problems found")

// command is one subcommand, such as "poison list".
type command struct {
	name    string // "poison list"
	summary string
	usage   string // the arguments after the flags, and examples
	flags   func(fs *flag.FlagSet) func(ctx context.Context, cl *cli, args []string) error
}

func commands() []command {
	var all []command
	all = append(all, keysCommands()...)
	all = append(all, poisonCommands()...)
	all = append(all, periodsCommands()...)
	return all
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, nil)
	stop()
	os.Exit(code)
}

// run is the whole program, callable from tests: args without the
// program's name; accounts, when non-nil, replaces the account the flags
// would open (tests pass the fakes).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, accounts func() (*account, error)) int {
	g := flag.NewFlagSet("tablekit", flag.ContinueOnError)
	g.SetOutput(stderr)
	var common commonFlags
	common.register(g)
	g.Usage = func() { topUsage(stderr, g) }
	if err := g.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := g.Args()
	if len(rest) == 0 {
		topUsage(stderr, g)
		return exitUsage
	}
	if rest[0] == "stats" { // "tablekit stats CMD …" is "tablekit -stats CMD …"
		common.stats = true
		rest = rest[1:]
	}
	cmd, args, ok := find(rest)
	if !ok {
		fmt.Fprintf(stderr, "tablekit: unknown command %q\n\n", strings.Join(rest, " "))
		topUsage(stderr, g)
		return exitUsage
	}
	fs := flag.NewFlagSet("tablekit "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var local commonFlags
	local.register(fs)
	do := cmd.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\n%s\n\nflags:\n", strings.TrimSpace("tablekit "+cmd.name+" [flags] "+firstLine(cmd.usage)), cmd.summary)
		fs.PrintDefaults()
		if rest := restLines(cmd.usage); rest != "" {
			fmt.Fprintf(stderr, "\n%s\n", rest)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	cl := &cli{out: stdout, errOut: stderr, flags: local.merge(common), getenv: getenv, accounts: accounts}
	err := do(ctx, cl, fs.Args())
	if cl.acct != nil && cl.flags.stats {
		cl.printStats()
	}
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tablekit %s: %v\n", cmd.name, err)
		fs.Usage()
		return exitUsage
	case errors.Is(err, errProblemsFound):
		return exitProblems
	default:
		fmt.Fprintf(stderr, "tablekit %s: %v\n", cmd.name, err)
		return exitProblems
	}
}

// find picks the longest command name that args start with.
func find(args []string) (command, []string, bool) {
	for n := min(len(args), 2); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		for _, c := range commands() {
			if c.name == name {
				return c, args[n:], true
			}
		}
	}
	return command{}, nil, false
}

func topUsage(w io.Writer, g *flag.FlagSet) {
	fmt.Fprintf(w, "usage: tablekit [flags] COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-18s %s\n", "stats COMMAND", "run COMMAND and print its storage requests (same as -stats)")
	fmt.Fprintf(w, "\nflags (also accepted after the command):\n")
	g.PrintDefaults()
	fmt.Fprintf(w, "\n'tablekit COMMAND -help' shows a command's flags and examples.\nExit codes: 0 all well, 1 problems found or an operation failed, 2 usage.\n")
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
func restLines(s string) string { _, r, _ := strings.Cut(s, "\n"); return strings.TrimSpace(r) }
