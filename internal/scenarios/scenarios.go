package scenarios

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// Scenario is one scenario of the guide: an example program, and a
// section of the tour.
type Scenario struct {
	Name  string // the example program: examples/<Name>
	Title string
	Why   string // one line from the guide
	run   func(ctx context.Context, w io.Writer, env *env) error
}

// All lists the scenarios in the tour's order.
func All() []Scenario {
	return []Scenario{
		{"keys", "Keys", "Every efficient query is a point or a range over PartitionKey, RowKey order, so keys must sort the way the data should.", tourKeys},
		{"entities", "Typed entities", "Store entities as Go structs; use the entity's ETag for optimistic concurrency and the cheapest query that answers the question.", tourTable},
		{"transactions", "Entity group transactions", "Up to 100 operations on one partition commit together or not at all; batching also cuts the requests a bulk load costs.", tourBatch},
		{"employees", "Employees with intra- and inter-partition secondary indexes", "Copies under other RowKeys (same partition, one EGT) or other PartitionKeys (kept by a queue) give point lookups by email.", tourEmployees},
		{"lastnames", "Index entities: employees by last name", "Keep lists of IDs per value (EmployeeIDs per last name) to find all entities that share a non-unique value.", tourIndexEntities},
		{"departments", "Denormalization, compound keys, join in the client", "Combine related data so one query returns it; keep related rows next to their parent; cache small reference tables.", tourDenormalizedAndRelated},
		{"archive", "Eventually consistent transactions: archiving employee #456", "Across tables no transaction helps: a queue and idempotent, converging steps move the entity exactly once.", tourArchive},
		{"expenses", "Log tail: the ten most recent expense claims", "Inverted-tick RowKeys put the newest entity first, so the latest n are one request.", tourExpenses},
		{"logins", "High-volume delete: login attempts kept 60 days", "A table per day: expiring a day is one request that drops its table.", tourLogins},
		{"messagestats", "Data series and wide entities: message statistics", "A property per hour in one entity; a year of days split over parts written in one transaction.", tourMessageStats},
		{"events", "Sharded appends: the prepend/append anti-pattern fixed", "Spread appends over partitions by a stable hash and merge them back in order.", tourEvents},
		{"photo", "Large entities: the employee photo", "Keep big properties in a blob and the reference in the entity; blob first, then entity.", tourPhoto},
		{"logs", "Log data in blobs: application logs", "Logs belong in blobs named by time, not in a table.", tourLogs},
	}
}

// Run runs the named scenarios (all when none is named) against the fakes
// or, with a connection string, the account it names.
func Run(ctx context.Context, w io.Writer, conn string, names ...string) error {
	e, err := newEnv(conn)
	if err != nil {
		return err
	}
	defer e.cleanup()
	where := "in memory (fakes)"
	if conn != "" {
		where = "against the storage account in the connection string"
	}
	var list []Scenario
	for _, s := range All() {
		if len(names) == 0 || slices.Contains(names, s.Name) {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return fmt.Errorf("no scenario named %q", names)
	}
	fmt.Fprintf(w, "tablekit, %s\n", where)
	for i, s := range list {
		fmt.Fprintf(w, "\n%d. %s\n   why: %s\n", i+1, s.Title, s.Why)
		if err := s.run(ctx, w, e); err != nil {
			return fmt.Errorf("%s: %w", s.Title, err)
		}
	}
	fmt.Fprintf(w, "\nrequests, by operation (package ledger):\n")
	byOp := map[string]int{}
	var ops []string
	for _, en := range e.total.Entries() {
		k := string(en.Service) + " " + en.Operation
		if _, ok := byOp[k]; !ok {
			ops = append(ops, k)
		}
		byOp[k] += en.Requests
	}
	for _, k := range ops {
		fmt.Fprintf(w, "   %-28s %5d\n", k, byOp[k])
	}
	fmt.Fprintf(w, "   %-28s %5d (%d retries)\n", "total", e.total.Total(), e.total.Retries())
	fmt.Fprintln(w, "\ncomplete")
	return nil
}

// Main is an example program's main: it runs the named scenarios against
// the fakes, or against -conn / TABLEKIT_CONNECTION_STRING, and exits
// non-zero on any failure.
func Main(names ...string) {
	conn := flag.String("conn", os.Getenv("TABLEKIT_CONNECTION_STRING"), "storage connection string (default: in-memory fakes; env TABLEKIT_CONNECTION_STRING)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := Run(ctx, os.Stdout, *conn, names...); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func tourKeys(_ context.Context, w io.Writer, _ *env) error {
	emp, err := keys.FixedUint(123, 6)
	if err != nil {
		return err
	}
	review, err := keys.Join(emp, "2012")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   compound key      keys.Join(%q, \"2012\")            = %s\n", emp, review)
	if _, err := keys.Join("a_b", "c"); err != nil {
		fmt.Fprintf(w, "   refused           keys.Join(\"a_b\", \"c\")           : %v\n", err)
	}
	tup, err := keys.EncodeTuple("Sales", "a/b?")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   tuple encoding    keys.EncodeTuple(\"Sales\", \"a/b?\") = %s\n", tup)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	fmt.Fprintf(w, "   log tail RowKey   keys.InvertedTicks(%s) = %s (newest first, same as .NET)\n", at.Format(time.RFC3339), keys.InvertedTicks(at))
	fmt.Fprintf(w, "   signed number     keys.Int64(-42) = %s, keys.Int64(42) = %s\n", keys.Int64(-42), keys.Int64(42))
	lo, hi := keys.PrefixRange("empid_")
	fmt.Fprintf(w, "   prefix range      keys.PrefixRange(\"empid_\") = [%q, %q)\n", lo, hi)
	shard, err := keys.ShardName("events", keys.ShardBucket("000123", 16), 16)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   shard             keys.ShardName(\"events\", ShardBucket(\"000123\", 16), 16) = %s\n", shard)
	tbl, err := keys.PeriodTable("Logins", keys.Daily, at, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   table per period  keys.PeriodTable(\"Logins\", Daily, ...) = %s\n", tbl)
	fmt.Fprintln(w, "   requests: 0 (keys does no I/O)")
	return nil
}

// Employee is the guide's employee entity.
type Employee struct {
	table.Meta
	FirstName string
	LastName  string
	Age       int
	Email     string
}

func tourTable(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Employees")
	if err != nil {
		return err
	}
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		return err
	}
	step := e.step(w)
	for _, emp := range []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Age: 34, Email: "donh@contoso.com"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, FirstName: "Jun", LastName: "Cao", Age: 47, Email: "junc@contoso.com"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, FirstName: "Ben", LastName: "Jones", Age: 65, Email: "jonesj@contoso.com"},
	} {
		if err := employees.Add(ctx, emp, nil); err != nil {
			return err
		}
	}
	step("Add 3 employees (Sales / empid_000123, 000152, 000223)")
	got, err := employees.Get(ctx, "Sales", "empid_000123", nil)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Get Sales/empid_000123: %s %s, ETag %s", got.FirstName, got.LastName, got.ETag))
	// The change sets a value: if the write's response is lost, Modify
	// may apply it to the changed entity again, and setting is harmless.
	if _, err := employees.Modify(ctx, "Sales", "empid_000123", func(v *Employee) error { v.Email = "don.hall@contoso.com"; return nil }, nil); err != nil {
		return err
	}
	step("Modify (read, change, write with the ETag): email set to don.hall@contoso.com")
	stale := *got
	stale.Age = 0
	err = employees.Update(ctx, &stale, nil)
	step(fmt.Sprintf("Update with the stale ETag: precondition failed = %v", table.IsPreconditionFailed(err)))
	f := table.RowBetween("Sales", "empid_000100", "empid_000199")
	n := 0
	for _, err := range employees.Query(ctx, &table.QueryOptions{Filter: f}) {
		if err != nil {
			return err
		}
		n++
	}
	step(fmt.Sprintf("%v %s: %d employees", table.Classify(f), f, n))
	scan := table.Prop("LastName").Eq("Jones")
	step(fmt.Sprintf("would be a %v: %s (index it instead; see the index patterns)", table.Classify(scan), scan))
	bad := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "a/b"}}
	err = employees.Add(ctx, bad, nil)
	step(fmt.Sprintf("refused before sending: %v", err))
	return nil
}
