// Package cli is the tablekit maintenance command as a library: Main runs
// it with the indexes a program registers, so that an operator builds a
// binary that can verify and repair their own Go index definitions in ten
// lines (cmd/tablekit is Main with no indexes):
//
//	func main() {
//		employees, _ := table.New[Employee](client, opts)
//		staff, _ := patterns.OpenModel(ctx, employees, &patterns.ModelOptions[Employee]{...})
//		os.Exit(cli.Main(context.Background(), os.Args[1:], &cli.Options{
//			Registrations: []cli.Registration{cli.Index("staff", staff)},
//		}))
//	}
//
// The commands inspect and repair what tablekit's patterns leave in a
// storage account: the worker's poison queue, period tables, indexes, and
// keys that need decoding.
//
//	tablekit keys decode 2519880551999999999
//	tablekit poison list -queue archive-poison
//	tablekit poison replay -queue archive-poison -work archive -type archive.v1
//	tablekit periods precreate -prefix Logins -period daily -ahead 7
//	tablekit -stats keys encode -as tuple Sales 000123
//
// It works against a connection string (-conn, or TABLEKIT_CONNECTION_STRING
// or AZURE_STORAGE_CONNECTION_STRING), an account with Microsoft Entra ID
// (-account NAME, through azidentity.DefaultAzureCredential), or Azurite.
// -conn and -account together are a usage error. A connection string's
// requests go to the endpoints it names, with an account key or a SAS
// (accounts.ParseConnectionString); one that cannot be honoured is a usage
// error.
// Every subcommand has -help with examples and -json output.
//
// Exit codes (ExitOK, ExitFailed, ExitUsage, ExitFindings):
//
//	0  the command did what was asked: a listing, a dry run, a repair, a sweep
//	1  an operation failed (the storage service, the network, a partial repair)
//	2  a usage error, or a flag the command refuses; nothing was sent
//	3  index verify found an index that disagrees with its primaries
//
// Destructive commands (periods expire, poison purge, large sweep, index
// repair) change nothing without -yes: they list what they would do. With
// -yes they list what they did.
//
// -json prints one JSON object per run, its keys in lowerCamelCase; each
// command's object is documented in its -help. An error is the object
// {"error": message, "status": HTTP status or 0, "code": service error code
// or ""} on stderr.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// Main's exit codes.
const (
	ExitOK       = 0 // the command did what was asked (a dry run included)
	ExitFailed   = 1 // an operation failed
	ExitUsage    = 2 // a mistake in the command line, or a refused flag
	ExitFindings = 3 // index verify: the index disagrees with its primaries
)

const (
	exitOK       = ExitOK
	exitFailed   = ExitFailed
	exitUsage    = ExitUsage
	exitFindings = ExitFindings
)

// Options configure Main. nil means the defaults.
type Options struct {
	// Stdout gets the results. Default: os.Stdout.
	Stdout io.Writer
	// Stderr gets usage, errors, -stats and the progress bar. Default:
	// os.Stderr (the bar shows only when it is a terminal).
	Stderr io.Writer
	// Getenv reads the connection string variables. Default: os.Getenv.
	Getenv func(string) string
	// Registrations are what the commands can name: the indexes (Index)
	// of "index verify" and "index repair", and the large entities
	// (Large) of "large sweep". Default: none.
	Registrations []Registration
	// Ledger is the request ledger the registered indexes' clients are
	// attached to (ledger.Attach); -stats prints it for the index
	// commands. Default: none, and -stats then says it saw no requests.
	Ledger *ledger.Ledger
}

// Main runs the command line args (without the program's name) and returns
// the exit code: ExitOK, ExitProblems or ExitUsage. ctx ends the run
// (a program passes one that ends on SIGINT).
func Main(ctx context.Context, args []string, opts *Options) int {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	return run(ctx, args, o.Stdout, o.Stderr, o.Getenv, nil, o.Ledger, o.Registrations...)
}

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errFindings means the command ran and found something to fix (index
// verify): exit 3 with no error message beyond the command's own output.
var errFindings = errors.New("findings")

// errQuietFailure means the command failed and its output already says
// how: exit 1 with no further message.
var errQuietFailure = errors.New("failed")

// command is one subcommand, such as "poison list".
type command struct {
	name    string // "poison list"
	summary string
	usage   string // the arguments after the flags, and examples
	// noAccount commands open no storage account of their own (keys
	// works offline; the index commands use the program's clients): they
	// take no -conn or -account, and refuse one given before them.
	noAccount bool
	flags     func(fs *flag.FlagSet) func(ctx context.Context, cl *cli, args []string) error
}

func commands() []command {
	all := indexCommands()
	all = append(all, evolveCommands()...)
	all = append(all, largeCommands()...)
	all = append(all, keysCommands()...)
	all = append(all, poisonCommands()...)
	all = append(all, periodsCommands()...)
	return all
}

// run is the whole program, callable from tests: args without the
// program's name; accounts, when non-nil, replaces the account the flags
// would open (tests pass the fakes); indexes are the registered ones.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, accounts func() (*account, error), indexLedger *ledger.Ledger, regs ...Registration) int {
	// Help that was asked for goes to stdout; usage after a mistake, to
	// stderr.
	help := stderr
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			help = stdout
		}
	}
	g := flag.NewFlagSet("tablekit", flag.ContinueOnError)
	g.SetOutput(stderr)
	var common commonFlags
	common.register(g)
	g.Usage = func() { topUsage(help, g) }
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
		if len(rest) == 0 || strings.TrimLeft(rest[0], "-") == "help" || strings.TrimLeft(rest[0], "-") == "h" {
			fmt.Fprintf(help, "usage: tablekit stats COMMAND [flags] [args]\n\nRuns COMMAND and prints the storage requests it made (the request ledger) to stderr;\nthe same as tablekit -stats COMMAND. Example:\n  tablekit stats poison list -queue archive-poison\n")
			if help == stdout {
				return exitOK
			}
			return exitUsage
		}
	}
	cmd, args, ok := find(rest)
	if !ok {
		if group := groupOf(rest[0]); len(group) > 0 {
			// "tablekit poison" or "tablekit poison -help": the group's commands.
			fmt.Fprintf(help, "usage: tablekit %s COMMAND [flags] [args]\n\ncommands:\n", rest[0])
			for _, c := range group {
				fmt.Fprintf(help, "  %-18s %s\n", c.name, c.summary)
			}
			fmt.Fprintf(help, "\n'tablekit %s COMMAND -help' shows a command's flags and examples.\n", rest[0])
			if help == stdout {
				return exitOK
			}
			return exitUsage
		}
		fmt.Fprintf(stderr, "tablekit: unknown command %q\n\n", strings.Join(rest, " "))
		topUsage(stderr, g)
		return exitUsage
	}
	fs := flag.NewFlagSet("tablekit "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var local commonFlags
	if cmd.noAccount {
		local.registerOutput(fs)
	} else {
		local.register(fs)
	}
	do := cmd.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(help, "usage: %s\n\n%s\n\nflags:\n", strings.TrimSpace("tablekit "+cmd.name+" [flags] "+firstLine(cmd.usage)), cmd.summary)
		fs.SetOutput(help)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
		if rest := restLines(cmd.usage); rest != "" {
			fmt.Fprintf(help, "\n%s\n", rest)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if cmd.noAccount && (common.conn != "" || common.account != "") {
		fmt.Fprintf(stderr, "tablekit %s: -conn and -account do not apply: %s\n", cmd.name, noAccountWhy(cmd.name))
		return exitUsage
	}
	if f := local.merge(common); f.conn != "" && f.account != "" {
		// Two accounts named: refuse before either is opened, so nothing
		// is sent to the one the user did not mean.
		fmt.Fprintf(stderr, "tablekit %s: -conn and -account name two accounts: give one\n", cmd.name)
		return exitUsage
	}
	cl := &cli{out: stdout, errOut: stderr, flags: local.merge(common), getenv: getenv, accounts: accounts}
	for _, r := range regs {
		if r.large != nil {
			cl.large = append(cl.large, r)
		} else {
			cl.indexes = append(cl.indexes, r)
		}
	}
	err := do(ctx, cl, fs.Args())
	if cl.flags.stats {
		switch {
		case cl.acct != nil:
			cl.printStats(cl.acct.ledger)
		case strings.HasPrefix(cmd.name, "index ") && indexLedger != nil:
			cl.printStats(indexLedger)
		default:
			fmt.Fprintf(stderr, "no storage requests seen (the index commands count only clients attached to Options.Ledger)\n")
		}
	}
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tablekit %s: %v\n", cmd.name, err)
		fs.Usage()
		return exitUsage
	case errors.Is(err, errFindings):
		return exitFindings
	case errors.Is(err, errQuietFailure):
		return exitFailed
	default:
		// The one place every failure is printed: redacted, whatever
		// produced it.
		msg := redact.String(err.Error())
		// The service's answers that mean the names are wrong, in a
		// sentence rather than the SDK's whole response dump.
		switch {
		case table.Is(err, table.ErrQueueNotFound):
			msg = "the queue does not exist (404 QueueNotFound): check the queue flags, or create it"
		case table.Is(err, table.ErrContainerNotFound):
			msg = "the blob container does not exist (404 ContainerNotFound)"
		case table.Is(err, table.ErrTableNotFound):
			msg = "the table does not exist (404 TableNotFound)"
		}
		if cl.flags.json {
			_ = json.NewEncoder(stderr).Encode(map[string]any{"error": msg, "status": svcanswer.StatusCode(err), "code": svcanswer.ErrorCode(err)})
		} else {
			fmt.Fprintf(stderr, "tablekit %s: %s\n", cmd.name, msg)
		}
		return exitFailed
	}
}

// noAccountWhy says why a command takes no account flags.
func noAccountWhy(name string) string {
	if strings.HasPrefix(name, "index ") {
		return "the index reads and writes through the clients the program registered it with"
	}
	return "the command sends no request"
}

// groupOf is the commands whose name starts with word ("poison"), for
// "tablekit poison" with no command after it.
func groupOf(word string) []command {
	var out []command
	for _, c := range commands() {
		if first, _, _ := strings.Cut(c.name, " "); first == word {
			out = append(out, c)
		}
	}
	return out
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
	g.SetOutput(w)
	g.PrintDefaults()
	fmt.Fprintf(w, "\n'tablekit COMMAND -help' shows a command's flags and examples.\nExit codes: 0 done (dry runs included), 1 an operation failed, 2 usage, 3 index verify found disagreements.\n")
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
func restLines(s string) string { _, r, _ := strings.Cut(s, "\n"); return strings.TrimSpace(r) }
