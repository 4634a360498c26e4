package scenarios

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Expense is the guide's expense claim.
type Expense struct {
	table.Meta
	Amount float64
}

func tourExpenses(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Shape")
	if err != nil {
		return err
	}
	step := e.step(w)
	log, err := patterns.NewLogTail[Expense](client, nil)
	if err != nil {
		return err
	}
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 25; i++ {
		if err := log.AppendAt(ctx, "empid_000123", base.Add(time.Duration(i)*time.Hour), &Expense{Amount: float64(10*i) + 0.5}); err != nil {
			return err
		}
	}
	step("log tail: 25 expense claims of employee 000123 under inverted-tick RowKeys")
	latest, err := log.Latest(ctx, "empid_000123", 10)
	if err != nil {
		return err
	}
	first, _ := patterns.EntryTime(latest[0].RowKey)
	step(fmt.Sprintf("the ten most recent claims, newest first (%s, %.1f)", first.Format(time.RFC3339), latest[0].Amount))

	return nil
}

func tourMessageStats(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "MessageStats")
	if err != nil {
		return err
	}
	step := e.step(w)
	series, err := patterns.NewDataSeries[int64](client, "H", 24)
	if err != nil {
		return err
	}
	if _, err := series.Set(ctx, "messages", "2026-11-21", 14, 42, nil); err != nil {
		return err
	}
	step("data series: one hour's message count set with one merge (H14 = 42)")
	s, err := series.Get(ctx, "messages", "2026-11-21")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("the day's 24 hourly counts with one point query (H14 = %d)", s.Values[14]))

	wide := patterns.NewWideEntity(client)
	stats := map[string]any{}
	for d := 0; d < 365; d++ {
		stats[fmt.Sprintf("Day%03d", d)] = int64(d)
	}
	v := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: stats}
	if err := wide.Put(ctx, v, &patterns.WidePutOptions{Current: &patterns.Wide{}}); err != nil {
		return err
	}
	step(fmt.Sprintf("wide entity: 365 days of message stats in %d parts, one transaction", v.Parts))
	back, err := wide.Get(ctx, "stats", "2026", false)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("read back with one range query: %d properties", len(back.Properties)))

	_ = client
	return nil
}

func tourEvents(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Events")
	if err != nil {
		return err
	}
	step := e.step(w)
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	sharded, err := patterns.NewSharded[Expense](client, "events", 4)
	if err != nil {
		return err
	}
	for i := 0; i < 12; i++ {
		if err := sharded.Append(ctx, fmt.Sprint("source", i), &Expense{Meta: table.Meta{RowKey: keys.Ticks(base.Add(time.Duration(i) * time.Minute))}, Amount: float64(i)}, nil); err != nil {
			return err
		}
	}
	step("sharded appends: 12 events spread over 4 partitions by a stable hash")
	n := 0
	for _, err := range sharded.Read(ctx, nil) {
		if err != nil {
			return err
		}
		n++
	}
	step(fmt.Sprintf("merged reader: %d events in time order from 4 parallel queries", n))

	_ = client
	return nil
}

func tourLogins(ctx context.Context, w io.Writer, e *env) error {
	client, err := e.newTable(ctx, "Logins")
	if err != nil {
		return err
	}
	step := e.step(w)
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	rt, err := patterns.NewRollingTables[Expense](e.svc, "tourlogins"+e.suffix, keys.Daily, &patterns.RollingTablesOptions{Retention: 24 * time.Hour, Now: func() time.Time { return base.AddDate(0, 0, 3) }})
	if err != nil {
		return err
	}
	for d := 0; d < 3; d++ {
		at := base.AddDate(0, 0, d)
		if err := rt.Add(ctx, at, &Expense{Meta: table.Meta{PartitionKey: "login", RowKey: fmt.Sprint(d)}}, nil); err != nil {
			return err
		}
		name, _ := keys.PeriodTable("tourlogins"+e.suffix, keys.Daily, at, 0)
		e.created = append(e.created, name)
	}
	step("login attempts: a table per day, created on first use")
	dropped, err := rt.Expire(ctx)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("expiry drops whole tables, one request each: %d dropped", len(dropped)))
	_ = client
	return nil
}
