package patterns_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type Claim struct {
	table.Meta
	Amount float64
}

func newClient(name string) (*fake.TableService, table.Client) {
	svc := fake.NewTableService(nil)
	c := svc.NewClient(name, nil)
	_, _ = c.CreateTable(context.Background(), nil)
	return svc, c
}

// The ten most recent expense claims of an employee, in one request.
func ExampleLogTail() {
	ctx := context.Background()
	_, client := newClient("Expenses")
	claimTable, err := table.New[Claim](client, nil)
	if err != nil {
		panic(err)
	}
	claims, _ := patterns.NewLogTail[Claim](claimTable, nil)
	base := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 15; i++ {
		_ = claims.AppendAt(ctx, "empid_000123", base.AddDate(0, 0, i), &Claim{Amount: float64(i) + 0.5}, nil)
	}
	latest, _ := claims.Latest(ctx, "empid_000123", 10, nil)
	at, _ := keys.ParseInvertedTicks(latest[0].RowKey)
	fmt.Println(len(latest), latest[0].Amount, at.Format("2006-01-02"))
	// Output: 10 14.5 2026-11-15
}

// Messages per hour: one merge per hour, one point query per day.
func ExampleDataSeries() {
	ctx := context.Background()
	_, client := newClient("Stats")
	entities, err := table.New[table.Entity](client, nil)
	if err != nil {
		panic(err)
	}
	perHour, _ := patterns.NewDataSeries[int64](entities, "H", 24)
	_, _ = perHour.Set(ctx, "messages", "2026-11-21", 14, 42, nil)
	_, _ = perHour.Set(ctx, "messages", "2026-11-21", 15, 7, nil)
	day, _, _ := perHour.Get(ctx, "messages", "2026-11-21", nil)
	fmt.Println(day)
	// Output: map[14:42 15:7]
}

// A year of daily statistics: 365 properties over two entities, one transaction.
func ExampleWideEntity() {
	ctx := context.Background()
	_, client := newClient("Stats")
	entities, err := table.New[table.Entity](client, nil)
	if err != nil {
		panic(err)
	}
	w := patterns.NewWideEntity(entities)
	days := map[string]any{}
	for d := 0; d < 365; d++ {
		days[fmt.Sprintf("Day%03d", d)] = int64(d * 10)
	}
	v := &patterns.Wide{PartitionKey: "stats", RowKey: "2026", Properties: days}
	_ = w.Add(ctx, v, nil)
	back, _ := w.Get(ctx, "stats", "2026", false, nil)
	fmt.Println(v.Parts, len(back.Properties), back.Properties["Day364"])
	// Output: 2 365 3640
}

// Appends spread over four partitions, read back as one ordered stream.
func ExampleSharded() {
	ctx := context.Background()
	_, client := newClient("Events")
	claimTable, err := table.New[Claim](client, nil)
	if err != nil {
		panic(err)
	}
	events, _ := patterns.NewSharded[Claim](claimTable, "events", 4)
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := 0; i < 8; i++ {
		_ = events.Append(ctx, fmt.Sprint("source", i), &Claim{Meta: table.Meta{RowKey: keys.Ticks(base.Add(time.Duration(i) * time.Minute))}, Amount: float64(i)}, nil)
	}
	for v, _ := range events.Read(ctx, &patterns.ShardedReadOptions{Top: 4}) {
		fmt.Print(v.Amount, " ")
	}
	fmt.Println()
	// Output: 0 1 2 3
}

// Login attempts in a table per day, expired by dropping whole tables.
func ExampleRollingTables() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	logins, _ := patterns.NewRollingTables[Claim](svc.NewServiceClient(nil), "Logins", keys.Daily,
		&patterns.RollingTablesOptions{Retention: 48 * time.Hour, Now: func() time.Time { return now }})
	for d := -4; d <= 0; d++ {
		_ = logins.Add(ctx, now.AddDate(0, 0, d), &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: fmt.Sprint(d)}}, nil)
	}
	dropped, _ := logins.Expire(ctx, nil)
	fmt.Println(dropped)
	// Output: [Logins20261117 Logins20261118]
}

// The employee photo in a blob, the entity keeping its name and hash.
func ExampleLargeEntity() {
	ctx := context.Background()
	_, client := newClient("Employees")
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "photos", nil)
	type Employee struct {
		table.Meta
		Photo []byte
	}
	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	photos, _ := patterns.NewLargeEntity[Employee](employeeTable, bc, "photos", []string{"Photo"}, 0, nil)
	_ = photos.Put(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, Photo: make([]byte, 200_000)}, nil)
	back, _ := photos.Get(ctx, "Sales", "000123", nil)
	fmt.Println(len(back.Photo), len(blobs.Names("photos")))
	// Output: 200000 1
}

// Application logs written to blobs by hour and read back by time.
func ExampleBlobLog() {
	ctx := context.Background()
	blobs := fake.NewBlobService(nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "logs", nil)
	log, _ := patterns.NewBlobLog(bc, "logs", "app", &patterns.BlobLogOptions{Writer: "web1"})
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	_ = log.AppendAt(ctx, at, "GET /employees 200", nil)
	_ = log.Close(ctx, nil)
	for e, _ := range log.Read(ctx, at, at.Add(time.Minute), nil) {
		fmt.Println(e.Text)
	}
	fmt.Println(blobs.Names("logs"))
	// Output:
	// GET /employees 200
	// [app/2014/07/31/1800/web1-000001.log]
}
