package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// patternCases: each pattern's constructor and verbs with bad input. They
// are grouped by pattern, one block each, so a block can follow its
// pattern's API when that changes.
func patternCases(t *testing.T, env *catalogueEnv) []badCase {
	t.Helper()
	emailIdx := func(s *Staff) string { return s.Email }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	idx, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
	must(err)
	cross, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Queue: env.qc, CrossCopies: []patterns.IndexDef[Staff]{
		{Name: "email", PartitionKey: func(s *Staff) string { return "email_" + s.PartitionKey }, Value: emailIdx},
	}})
	must(err)
	ents, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "ents", Primary: "empid_",
		Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}})
	must(err)
	ds, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](env.tc, nil)), "H", 24)
	must(err)
	lt, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](env.tc, nil)), nil)
	must(err)
	sh, err := patterns.NewSharded[Event](tableOf(table.New[Event](env.tc, nil)), "events", 4)
	must(err)
	wide := patterns.NewWideEntity(tableOf(table.New[table.Entity](env.tc, nil)))
	large, err := patterns.NewLargeEntity[Kept](tableOf(table.New[Kept](env.tc, nil)), env.bc, "catalogue", []string{"Name"}, 0, nil)
	must(err)
	stream, err := eventstream.New[Deposit](env.tc, nil)
	must(err)
	hour := time.Now().Add(time.Hour)
	sasOf := func(table string, perms sas.TablePermissions, start, expiry time.Time, r sas.KeyRange, key string) func(context.Context) error {
		return func(context.Context) error {
			_, err := tableSAS("account", key, table, perms, start, expiry, r)
			return err
		}
	}
	read := sas.TablePermissions{Read: true}
	goodKey := "bm90IGtleQ=="

	return []badCase{
		// IntraPartitionIndex
		{"intra-partition index without a name", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Staff]{{Prefix: "email_", Value: emailIdx}}})
			return err
		}, nil},
		{"two intra-partition indexes of one name", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Staff]{
				{Name: "e", Prefix: "email_", Value: emailIdx}, {Name: "e", Prefix: "mail2_", Value: emailIdx}}})

			return err
		}, nil},
		{"intra-partition index without a value func", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Staff]{{Name: "e", Prefix: "email_"}}})
			return err
		}, nil},
		{"intra-partition index projecting an unknown property", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Staff]{{Name: "e", Prefix: "email_", Value: emailIdx, Project: []string{"Salary"}}}})
			return err
		}, nil},
		{"intra-partition lookup of an unknown index", patterns.ErrUnknownIndex, func(ctx context.Context) error {
			_, err := idx.Lookup(ctx, "phone", "Sales", "555", nil)
			return err
		}, nil},
		{"intra-partition point lookup of a non-unique index", patterns.ErrNotUnique, func(ctx context.Context) error {
			_, err := idx.Lookup(ctx, "lname", "Sales", "Jones", nil)
			return err
		}, nil},
		{"intra-partition find in an unknown index", patterns.ErrUnknownIndex, func(ctx context.Context) error {
			_, err := seqs.Collect(idx.Find(ctx, "phone", "Sales", "555", nil))
			return err
		}, nil},
		{"intra-partition Delete (the model's) with a bad RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return idx.Delete(ctx, "Sales", "empid_a/b", nil)
		}, anyValidation()},
		{"intra-partition Upsert (the model's) of nil", table.ErrNilValue, func(ctx context.Context) error {
			return idx.Upsert(ctx, nil, &table.UpsertOptions{Mode: aztables.UpdateModeReplace})
		}, inputRule(table.ErrNilValue)},
		{"intra-partition Upsert (the model's) of an entity without the primary prefix", patterns.ErrNotPrimary, func(ctx context.Context) error {
			v := staff("x", "a", "b", "c@x.com", 1)
			v.RowKey = "x_1"
			return idx.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace})
		}, nil},
		{"intra-partition unique value that is not a valid key", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return idx.Add(ctx, staff("1", "a", "b", "a/b@x.com", 1), nil)
		}, anyValidation()},

		// InterPartitionIndex
		{"inter-partition index without a queue", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Queue: nil, CrossCopies: []patterns.IndexDef[Staff]{{Name: "e", PartitionKey: func(*Staff) string { return "e" }, Value: emailIdx}}})
			return err
		}, nil},
		{"inter-partition index without a PartitionKey func", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Queue: env.qc, CrossCopies: []patterns.IndexDef[Staff]{{Name: "e", Value: emailIdx}}})
			return err
		}, nil},
		{"two inter-partition indexes of one name", patterns.ErrBadDefinition, func(context.Context) error {
			d := patterns.IndexDef[Staff]{Name: "e", PartitionKey: func(*Staff) string { return "e" }, Value: emailIdx}
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Queue: env.qc, CrossCopies: []patterns.IndexDef[Staff]{d, d}})
			return err
		}, nil},
		{"inter-partition index projecting an unknown property", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Queue: env.qc, CrossCopies: []patterns.IndexDef[Staff]{{Name: "e", PartitionKey: func(*Staff) string { return "e" }, Value: emailIdx, Project: []string{"Salary"}}}})
			return err
		}, nil},
		{"inter-partition lookup of an unknown index", patterns.ErrUnknownIndex, func(ctx context.Context) error {
			_, err := cross.Lookup(ctx, "phone", "Sales", "555", nil)
			return err
		}, nil},
		{"inter-partition range of an unknown index", patterns.ErrUnknownIndex, func(ctx context.Context) error {
			_, err := seqs.Collect(cross.Range(ctx, "phone", "Sales", "a", "b", nil))
			return err
		}, nil},
		{"inter-partition Upsert (the model's) with a bad key", keys.ErrForbiddenChar, func(ctx context.Context) error {
			v := staff("1", "a", "b", "c@x.com", 1)
			v.PartitionKey = "Sa/les"
			return cross.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace})
		}, anyValidation()},

		// IndexEntities and RemoteIndexEntities
		{"index entities without a prefix", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "l", Primary: "empid_", Lists: []patterns.ListDef[Staff]{{Name: "l", Value: func(s *Staff) string { return s.LastName }}}})
			return err
		}, nil},
		{"index entities without a value func", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "l", Primary: "empid_", Lists: []patterns.ListDef[Staff]{{Name: "l", Prefix: "lname_"}}})
			return err
		}, nil},
		{"index entities Add of a bad key", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return ents.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_a#b"}, LastName: "Jones"}, nil)
		}, anyValidation()},
		{"remote index entities in a bad partition", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "r", Queue: env.qc, RemoteLists: []patterns.ListDef[Staff]{
				{Name: "r", Value: func(s *Staff) string { return s.LastName }, Table: tableOf(table.New[table.Entity](env.tc, nil)), Partition: "a/b", Prefix: "lname_"}}})
			return err
		}, nil},

		// DataSeries
		{"data series with a bad prefix", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](env.tc, nil)), "1 H", 24)
			return err
		}, nil},
		{"data series negative slot", table.ErrValueOutOfRange, func(ctx context.Context) error { _, err := ds.Set(ctx, "p", "r", -1, 1, nil); return err }, inputRule(table.ErrValueOutOfRange)},
		{"data series SetMany with a slot out of range", table.ErrValueOutOfRange, func(ctx context.Context) error {
			_, err := ds.SetMany(ctx, "p", "r", map[int]int64{0: 1, 99: 2}, nil)
			return err
		}, inputRule(table.ErrValueOutOfRange)},
		{"data series Set with a bad key", keys.ErrForbiddenChar, func(ctx context.Context) error { _, err := ds.Set(ctx, "p", "a?b", 1, 1, nil); return err }, anyValidation()},

		// Denormalized
		{"denormalization without fields", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewDenormalized[Staff, Employee](tableOf(table.New[Staff](env.tc, nil)), tableOf(table.New[Employee](env.tc, nil)), nil, func(*Staff, *Employee) {})
			return err
		}, nil},
		{"denormalization of a field the copy lacks", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewDenormalized[Staff, Employee](tableOf(table.New[Staff](env.tc, nil)), tableOf(table.New[Employee](env.tc, nil)), []string{"Salary"}, func(*Staff, *Employee) {})
			return err
		}, nil},

		// LargeEntity
		{"large entity of a field that does not exist", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewLargeEntity[Kept](tableOf(table.New[Kept](env.tc, nil)), env.bc, "catalogue", []string{"Photo"}, 0, nil)
			return err
		}, nil},
		{"large entity in a badly named container", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewLargeEntity[Kept](tableOf(table.New[Kept](env.tc, nil)), env.bc, "Bad_Name", []string{"Name"}, 0, nil)
			return err
		}, nil},

		{"large entity Put of nil", table.ErrNilValue, func(ctx context.Context) error { return large.Put(ctx, nil, nil) }, inputRule(table.ErrNilValue)},
		{"large entity Put with a bad RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return large.Put(ctx, &Kept{Meta: table.Meta{PartitionKey: "p", RowKey: "a?b"}, Name: "x"}, nil)
		}, validation("RowKey")},
		{"large entity Get with a bad PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error { _, err := large.Get(ctx, "a\\b", "r", nil); return err }, validation("PartitionKey")},
		{"large entity Delete with a bad RowKey", keys.ErrControlChar, func(ctx context.Context) error { return large.Delete(ctx, "p", "r\x7f", nil) }, validation("RowKey")},

		// LogTail
		{"log tail of a negative count", table.ErrBadOption, func(ctx context.Context) error { _, err := lt.Latest(ctx, "p", -1, nil); return err }, inputRule(table.ErrBadOption)},
		{"log tail of over 1,000 entries", table.ErrBadOption, func(ctx context.Context) error { _, err := lt.Latest(ctx, "p", 1001, nil); return err }, inputRule(table.ErrBadOption)},
		{"log tail append to a bad PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error { return lt.Append(ctx, "a/b", &Claim{}, nil) }, anyValidation()},
		{"log tail append by a writer with a slash", keys.ErrForbiddenChar, func(ctx context.Context) error {
			l, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](env.tc, nil)), &patterns.LogTailOptions{Writer: "w/1"})
			if err != nil {
				return err
			}
			return l.Append(ctx, "p", &Claim{}, nil)
		}, validation("key component")},

		// Sharded
		{"negative shard count", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewSharded[Event](tableOf(table.New[Event](env.tc, nil)), "events", -1)
			return err
		}, nil},
		{"shard prefix with a slash", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewSharded[Event](tableOf(table.New[Event](env.tc, nil)), "ev/ents", 4)
			return err
		}, nil},
		{"sharded read of a negative Top", table.ErrBadOption, func(ctx context.Context) error {
			_, err := seqs.Collect(sh.Read(ctx, &patterns.ShardedReadOptions{Top: -1}))
			return err
		}, inputRule(table.ErrBadOption)},
		{"sharded append with a bad RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return sh.Append(ctx, "k", &Event{Meta: table.Meta{RowKey: "a#b"}}, nil)
		}, anyValidation()},

		// WideEntity
		{"wide entity: nil", table.ErrNilValue, func(ctx context.Context) error { return wide.Put(ctx, nil, nil) }, inputRule(table.ErrNilValue)},
		{"wide entity: property of an unsupported type", table.ErrUnsupportedType, func(ctx context.Context) error {
			return wide.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"C": make(chan int)}}, nil)
		}, inputRule(table.ErrUnsupportedType)},
		{"wide entity: bad property name", keys.ErrInvalidName, func(ctx context.Context) error {
			return wide.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"a b": 1}}, nil)
		}, anyValidation()},
		{"wide entity: Get with a bad PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error { _, err := wide.Get(ctx, "a#b", "r", false, nil); return err }, anyValidation()},
		// A wide entity's RowKey is stored tuple-encoded, which escapes
		// every character; its PartitionKey is stored as given.
		{"wide entity: Delete with a bad PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error { return wide.Delete(ctx, "p?q", "ab", nil) }, anyValidation()},
		{"wide entity: bad PartitionKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			return wide.Put(ctx, &patterns.Wide{PartitionKey: "p/q", RowKey: "ab", Properties: map[string]any{"A": 1}}, nil)
		}, anyValidation()},

		// RollingTables (table per period)
		{"table per period of an unknown period", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewRollingTables[Claim](env.tables.NewServiceClient(nil), "logins", keys.Period(0), nil)
			return err
		}, nil},

		// SAS
		{"SAS that expires before it starts", sas.ErrBadSAS, sasOf("good", read, hour, hour.Add(-time.Minute), sas.KeyRange{}, goodKey), nil},
		{"SAS without an expiry", sas.ErrBadSAS, sasOf("good", read, time.Time{}, time.Time{}, sas.KeyRange{}, goodKey), nil},
		{"SAS account key that is not base64", sas.ErrBadSAS, sasOf("good", read, time.Time{}, hour, sas.KeyRange{}, "not base64!"), nil},
		{"SAS for a bad table name", sas.ErrBadSAS, sasOf("a", read, time.Time{}, hour, sas.KeyRange{}, goodKey), nil},
		{"SAS key range with a bad key", sas.ErrBadSAS, sasOf("good", read, time.Time{}, hour, sas.KeyRange{StartPartitionKey: "a/b"}, goodKey), nil},

		// BlobLog and BlobIndex
		{"blob index in a badly named container", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.OpenModel(context.Background(), tableOf(table.New[Staff](env.tc, nil)), &patterns.ModelOptions[Staff]{Name: "b", Queue: env.qc, RemoteLists: []patterns.ListDef[Staff]{
				{Name: "b", Value: func(s *Staff) string { return s.LastName }, Blobs: env.bc, Container: "Bad_Name", Prefix: "x"}}})
			return err
		}, nil},

		{"log data in blobs: badly named container", patterns.ErrBadDefinition, func(context.Context) error {
			_, err := patterns.NewBlobLog(env.bc, "ab", "x", nil)
			return err
		}, nil},

		{"denormalization Update of 100 targets", batch.ErrTooManyOperations, func(ctx context.Context) error {
			d, err := patterns.NewDenormalized[Staff, Employee](tableOf(table.New[Staff](env.tc, nil)), tableOf(table.New[Employee](env.tc, nil)), []string{"Email"}, func(s *Staff, e *Employee) { e.Email = s.Email })
			if err != nil {
				return err
			}
			targets := make([]string, 100)
			for i := range targets {
				targets[i] = fmt.Sprintf("t%03d", i)
			}
			return d.Update(ctx, staff("1", "a", "b", "c@x.com", 1), targets, nil)
		}, nil},
		{"denormalization Update of a target with a bad RowKey", keys.ErrForbiddenChar, func(ctx context.Context) error {
			d, err := patterns.NewDenormalized[Staff, Employee](tableOf(table.New[Staff](env.tc, nil)), tableOf(table.New[Employee](env.tc, nil)), []string{"Email"}, func(s *Staff, e *Employee) { e.Email = s.Email })
			if err != nil {
				return err
			}
			return d.Update(ctx, staff("1", "a", "b", "c@x.com", 1), []string{"t/1"}, nil)
		}, anyValidation()},
		{"index entities Update (the model's) of a value without an ETag", table.ErrNoETag, func(ctx context.Context) error {
			return ents.Update(ctx, staff("1", "a", "Jones", "c@x.com", 1), nil)
		}, inputRule(table.ErrNoETag)},
		{"index entities IDs (the model's) in a bad partition", keys.ErrForbiddenChar, func(ctx context.Context) error {
			_, err := ents.IDs(ctx, "lname", "Sa/les", "Jones", nil)
			return err
		}, anyValidation()},
		{"related rows write across partitions", batch.ErrMixedPartitions, func(ctx context.Context) error {
			// Related rows are written with batch.Submit, one transaction.
			_, err := batch.Submit(ctx, env.tc, []batch.Op{batch.Upsert(&Employee{Meta: table.Meta{PartitionKey: "a", RowKey: "o1"}}, aztables.UpdateModeReplace), batch.Upsert(&Employee{Meta: table.Meta{PartitionKey: "b", RowKey: "o1_1"}}, aztables.UpdateModeReplace)}, nil)
			return err
		}, opAt(1, nil)},
		{"data series Get with a bad key", keys.ErrControlChar, func(ctx context.Context) error { _, _, err := ds.Get(ctx, "p\x00", "r", nil); return err }, anyValidation()},

		// Related rows' compound RowKeys (keys.Compound)
		{"related rows key part holding the separator", keys.ErrForbiddenChar, func(context.Context) error {
			_, err := keys.Compound{}.Join("order1", "line_2")
			return err
		}, anyValidation()},
		{"event stream snapshot that embeds no Snapshot", eventstream.ErrBadDefinition, func(ctx context.Context) error {
			_, err := stream.Append(ctx, eventstream.NewHead("p"), []*Deposit{{Amount: 1}}, &eventstream.AppendOptions{Snapshot: &Employee{}})
			return err
		}, inputField(eventstream.ErrBadDefinition, "Snapshot")},
	}

}
