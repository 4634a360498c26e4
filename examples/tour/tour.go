package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// section is one stop of the tour.
type section struct {
	title string
	why   string // one line from the guide
	run   func(ctx context.Context, w io.Writer, env *env) error
}

func sections() []section {
	return []section{
		{"Keys", "Every efficient query is a point or a range over PartitionKey, RowKey order, so keys must sort the way the data should.", tourKeys},
		{"Typed entities", "Store entities as Go structs; use the entity's ETag for optimistic concurrency and the cheapest query that answers the question.", tourTable},
		{"Entity group transactions", "Up to 100 operations on one partition commit together or not at all; batching also cuts the requests a bulk load costs.", tourBatch},
		{"Intra-partition secondary index", "Store copies under other RowKeys of the same partition and keep them consistent with EGTs, for point lookups by another property.", tourIntraPartitionIndex},
		{"Index entities", "Keep lists of IDs per value (EmployeeIDs per last name) to find all entities that share a non-unique value.", tourIndexEntities},
		{"Denormalization, compound keys, join in the client", "Combine related data so one query returns it; keep related rows next to their parent; cache small reference tables.", tourDenormalizedAndRelated},
		{"Eventually consistent transactions, inter-partition index", "Across partitions no transaction helps: a queue and idempotent, converging steps make the copies agree eventually.", tourEventual},
		{"Log tail, data series, wide entity, sharding, table per period", "Shape keys and entities after the queries and deletes you need: newest first, a series per entity, splits, spreads, tables to drop.", tourShape},
	}
}

func run(ctx context.Context, w io.Writer, conn string) error {
	e, err := newEnv(conn)
	if err != nil {
		return err
	}
	defer e.cleanup()
	where := "in memory (fakes)"
	if conn != "" {
		where = "against the storage account in the connection string"
	}
	fmt.Fprintf(w, "tablekit tour, %s\n", where)
	for i, s := range sections() {
		fmt.Fprintf(w, "\n%d. %s\n   why: %s\n", i+1, s.title, s.why)
		if err := s.run(ctx, w, e); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	fmt.Fprintf(w, "\nrequests of the whole tour, by operation (package ledger):\n")
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
	fmt.Fprintln(w, "\ntour complete")
	return nil
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
	if _, err := employees.Modify(ctx, "Sales", "empid_000123", func(v *Employee) error { v.Age++; return nil }, nil); err != nil {
		return err
	}
	step("Modify (read, change, write with the ETag): age +1")
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
