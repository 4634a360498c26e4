// Command tour runs every example program in the order of the Table Storage
// design guide and says, for each, why the guide recommends the pattern.
// Each example is a complete program of its own (examples/<name>/main.go):
// read the one whose pattern you need, copy it, and run it.
//
//	go run ./examples/tour                    # in memory, no setup
//	go run ./examples/tour -conn "$CONN"      # Azurite or Azure, by connection string
//	go run ./examples/tour -account NAME      # Azure, signed in by azidentity
//
// The connection string may also come from TABLEKIT_CONNECTION_STRING.
// The tour builds the examples with one `go build` (so run it inside the
// tablekit module, with the go command on the PATH) into a directory of the
// user's cache (tablekit-tour under os.UserCacheDir, one per checkout, about
// 17 MB an example; delete it at will), where an example that has not
// changed is not linked again. It runs each with the same flags and exits
// non-zero if any of them fails.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
)

// stops are the examples in the guide's order, with the guide's reason.
var stops = []struct{ name, title, why string }{
	{"keys", "Keys", "Every efficient query is a point or a range over PartitionKey, RowKey order, so keys must sort the way the data should."},
	{"entities", "Typed entities", "Store entities as Go structs; use the entity's ETag for optimistic concurrency and the cheapest query that answers the question."},
	{"transactions", "Entity group transactions", "Up to 100 operations on one partition commit together or not at all; batching also cuts the requests a bulk load costs."},
	{"employees", "Employees by email: intra- and inter-partition secondary indexes", "Copies under other RowKeys (same partition, one transaction) or other PartitionKeys (kept by a queue) give point lookups by email."},
	{"lastnames", "Index entities: employees by last name", "Keep lists of IDs per value to find all entities that share a non-unique value."},
	{"departments", "Denormalization, compound keys, heterogeneous types, join in the client", "Combine related data so one query returns it; keep related rows next to their parent; cache small reference tables."},
	{"archive", "Eventually consistent transactions: archiving employee #456", "Across tables no transaction helps: a queue and idempotent, converging steps move the entity exactly once."},
	{"expenses", "Log tail: the ten most recent expense claims", "Inverted-tick RowKeys put the newest entity first, so the latest n are one request."},
	{"logins", "High-volume delete: login attempts", "A table per day: expiring a day is one request that drops its table."},
	{"messagestats", "Data series and wide entities: message statistics", "A property per hour in one entity; a year of days split over entities written in one transaction."},
	{"events", "Sharded appends: the prepend/append anti-pattern fixed", "Spread appends over partitions by a stable hash and merge them back in order."},
	{"photo", "Large entities: the employee photo", "Keep big properties in a blob and the reference in the entity; blob first, then entity."},
	{"logs", "Log data in blobs: application logs", "Logs belong in blobs named by time, not in a table."},
	{"directory", "The employee directory on one entity model", "Declare an entity's keys and every index once; every write, bulk load, move, query and verify then keeps all of them."},
}

func main() {
	conn := flag.String("conn", "", "storage connection string, Azurite or Azure (default: TABLEKIT_CONNECTION_STRING, else in memory)")
	account := flag.String("account", "", "storage account name, signed in with azidentity.DefaultAzureCredential (instead of -conn)")
	flag.Parse()
	// -conn and -account name two accounts: refuse rather than pick one.
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["conn"] && given["account"] {
		fmt.Fprintln(os.Stderr, "tour: -conn and -account name two accounts: give one")
		os.Exit(2)
	}
	var args []string
	if *conn != "" {
		args = append(args, "-conn", *conn)
	}
	if *account != "" {
		args = append(args, "-account", *account)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, args []string) error {
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	// A directory that lasts: go build then links only what changed, while
	// a fresh directory would link all 13 programs on every tour. It is
	// named after the checkout, so two checkouts never run each other's
	// programs.
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	sum := sha256.Sum256(bytes.TrimSpace(gomod))
	dir := filepath.Join(cache, "tablekit-tour", hex.EncodeToString(sum[:6]))
	pkgs := make([]string, len(stops))
	for i, s := range stops {
		pkgs[i] = "github.com/tablekit/tablekit/examples/" + s.name
	}
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build the examples: %v\n%s", err, out)
	}

	var failed []string
	totals := make([]string, len(stops))
	for i, s := range stops {
		fmt.Fprintf(w, "\n%d. %s (examples/%s)\n   why: %s\n\n", i+1, s.title, s.name, s.why)
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, filepath.Join(dir, s.name), args...)
		cmd.Stdout, cmd.Stderr = io.MultiWriter(w, &out), io.MultiWriter(w, &out)
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(w, "   examples/%s FAILED: %v\n", s.name, err)
			failed = append(failed, s.name)
			totals[i] = "failed"
			continue
		}
		totals[i] = lastTotal(out.String())
	}

	fmt.Fprintf(w, "\nthe tour, example by example (requests include set-up and clean-up):\n")
	for i, s := range stops {
		fmt.Fprintf(w, "   %-14s %s\n", s.name, totals[i])
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d examples failed: %s", len(failed), len(stops), strings.Join(failed, ", "))
	}
	fmt.Fprintf(w, "all %d examples passed\n", len(stops))
	return nil
}

// lastTotal is the ledger's closing "total …" line of an example's output.
func lastTotal(out string) string {
	total := "no ledger printed"
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "total ") {
			total = strings.TrimPrefix(line, "total ")
		}
	}
	return total
}
