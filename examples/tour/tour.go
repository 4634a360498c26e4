package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// section is one stop of the tour.
type section struct {
	title string
	why   string // one line from the guide
	run   func(ctx context.Context, w io.Writer, env *env) error
}

// env is what the sections share: where they run.
type env struct {
	conn string // "" means the in-memory fakes
}

func sections() []section {
	return []section{
		{"Keys", "Every efficient query is a point or a range over PartitionKey, RowKey order, so keys must sort the way the data should.", tourKeys},
	}
}

func run(ctx context.Context, w io.Writer, conn string) error {
	e := &env{conn: conn}
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
