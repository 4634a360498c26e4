package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// gapCases are the bad inputs the catalogue found accepted, or refused
// only after a request, by package patterns; each is refused before any
// request now. They have services of their own (an IndexReport with work
// in it needs a table with entities), built before the counters start.
func gapCases(t *testing.T) (cases []badCase, requests func() int) {
	t.Helper()
	ctx := t.Context()
	tables, queues, blobs := fake.NewTableService(nil), fake.NewQueueService(nil), fake.NewBlobService(nil)
	tc := tables.NewClient("gaps", nil)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	qc := queues.NewQueueClient("gaps", nil)
	_, _ = qc.Create(ctx, nil)
	bc := blobs.NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "gaps", nil)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A primary written around its index: Verify reports its copies missing,
	// so a Repair has work and would send.
	plain, _ := table.New[Staff](tc, nil)
	must(plain.Add(ctx, staff("000001", "A", "Jones", "a@x.com", 1), nil))
	idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	must(err)
	rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
	must(err)
	if rep.OK() {
		t.Fatal("the gap cases need a report with work in it")
	}
	people, _ := table.New[Staff](tc, nil)
	eventual, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "eventual", Queue: qc, RemoteLists: []patterns.ListDef[Staff]{
		{Name: "lname", Value: func(s *Staff) string { return s.LastName }, Table: tableOf(table.New[table.Entity](tc, nil)), Partition: "lists", Prefix: "lname_"}}})
	must(err)
	lt, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](tc, nil)), nil)
	must(err)
	sh, err := patterns.NewSharded[Event](tableOf(table.New[Event](tc, nil)), "events", 4)
	must(err)
	reader, err := patterns.NewBlobLog(bc, "gaps", "logs", nil)
	must(err)
	cache := patterns.NewReferenceCache[Staff](people, &patterns.ReferenceCacheOptions{TTL: -time.Second})
	now := time.Now()
	drain := func(seq func(func(patterns.LogEntry, error) bool)) error {
		for _, err := range seq {
			if err != nil {
				return err
			}
		}
		return nil
	}
	option := func(field string) *typedCheck {
		return &typedCheck{doc: "`*table.InputError` Field " + field, check: func(err error) error {
			var ie *table.InputError
			if !errors.As(err, &ie) || ie.Field != field {
				return fmt.Errorf("want a *table.InputError on %s", field)
			}
			return nil
		}}
	}
	tables.ResetCounts()
	queues.ResetCounts()
	blobs.ResetCounts()
	requests = func() int { return tables.Total() + queues.Total() + blobs.Total() }
	return []badCase{
		{"Model.Add, with a list elsewhere, of a number sign in its RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return eventual.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "a#b"}, LastName: "Jones"}, nil)
		}, nil},
		{"BlobLog to read from an invalid container name", keys.ErrInvalidName, func(ctx context.Context) error {
			_, err := patterns.NewBlobLog(bc, "Bad_Name", "logs", nil)
			return err
		}, nil},
		{"BlobLog.Read from after until", table.ErrInvalidValue, func(ctx context.Context) error {
			return drain(reader.Read(ctx, now, now.Add(-time.Hour), nil))
		}, option("until")},
		{"DataSeries with 0 slots", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](tc, nil)), "H", 0)
			return err
		}, nil},
		{"ListDef.MaxListUnits above what one entity holds", table.ErrBadOption, func(context.Context) error {
			_, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](tc, nil)), &patterns.ModelOptions[Staff]{Name: "l", Primary: "empid_", Lists: []patterns.ListDef[Staff]{
				{Name: "l", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }, MaxListUnits: 15*table.MaxStringUTF16 + 1}}})
			return err
		}, option("MaxListUnits")},
		{"BlobLogOptions.MaxBytes below 0", table.ErrBadOption, func(context.Context) error {
			_, err := patterns.NewBlobLog(bc, "gaps", "logs", &patterns.BlobLogOptions{MaxBytes: -1})
			return err
		}, option("MaxBytes")},
		{"BlobLogOptions.MaxAge below 0", table.ErrBadOption, func(context.Context) error {
			_, err := patterns.NewBlobLog(bc, "gaps", "logs", &patterns.BlobLogOptions{MaxAge: -time.Second})
			return err
		}, option("MaxAge")},
		{"ShardedReadOptions.Parallelism below 0", table.ErrBadOption, func(ctx context.Context) error {
			for _, err := range sh.Read(ctx, &patterns.ShardedReadOptions{Parallelism: -1}) {
				if err != nil {
					return err
				}
			}
			return nil
		}, option("Parallelism")},
		{"ReferenceCacheOptions.TTL below 0", table.ErrBadOption, func(ctx context.Context) error {
			_, _, err := cache.Get(ctx, "Sales", "empid_000001", nil)
			return err
		}, option("TTL")},
		{"RepairOptions.PerTransaction 1", table.ErrBadOption, func(ctx context.Context) error {
			_, err := idx.Repair(ctx, repairOpts(rep, &patterns.RepairOptions{PerTransaction: 1}))
			return err
		}, option("PerTransaction")},
		{"RepairOptions.PerTransaction 101", table.ErrBadOption, func(ctx context.Context) error {
			_, err := idx.Repair(ctx, repairOpts(rep, &patterns.RepairOptions{PerTransaction: 101}))
			return err
		}, option("PerTransaction")},
		{"TableSAS with StartPartitionKey after EndPartitionKey", table.ErrInvalidValue, func(context.Context) error {
			_, err := tableSAS("account", "bm90IGtleQ==", "gaps", sas.TablePermissions{Read: true}, time.Time{}, now.Add(time.Hour), sas.KeyRange{StartPartitionKey: "z", EndPartitionKey: "a"})
			return err
		}, option("KeyRange")},
		{"LogTail.Between from after to", table.ErrInvalidValue, func(ctx context.Context) error {
			for _, err := range lt.Between(ctx, "p", now, now.Add(-time.Hour), nil) {
				if err != nil {
					return err
				}
			}
			return nil
		}, option("to")},
	}, requests
}

// TestBadInputGaps runs the gap cases as TestBadInputCatalogue runs its
// own: the sentinel and typed error, and no request per case.
func TestBadInputGaps(t *testing.T) {
	cases, requests := gapCases(t)
	for _, c := range cases {
		before := requests()
		err := c.call(t.Context())
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		} else if c.typed != nil {
			if terr := c.typed.check(err); terr != nil {
				t.Errorf("%s: %v: %v", c.name, err, terr)
			}
		}
		if n := requests() - before; n != 0 {
			t.Errorf("%s: sent %d requests", c.name, n)
		}
	}
}
