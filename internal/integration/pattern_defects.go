package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Nicked is an employee whose nickname is optional: a nil Nick is no
// property at all, so setting it to nil removes the property.
type Nicked struct {
	table.Meta
	Department string
	Email      string
	Nick       *string
}

// rawProps reads one entity as the service stores it.
func rawProps(t *testing.T, c *aztables.Client, pk, rk string) map[string]any {
	t.Helper()
	resp, err := c.GetEntity(t.Context(), pk, rk, nil)
	if err != nil {
		t.Fatalf("GetEntity(%s, %s): %v", pk, rk, err)
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// mergeInto adds props to a stored entity with the SDK's Merge, as a
// writer around tablekit (or an older tablekit) would.
func mergeInto(t *testing.T, c *aztables.Client, pk, rk string, props map[string]any) {
	t.Helper()
	props["PartitionKey"], props["RowKey"] = pk, rk
	body, _ := json.Marshal(props)
	if _, err := c.UpsertEntity(t.Context(), body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge}); err != nil {
		t.Fatal(err)
	}
}

// RunPatternDefects reproduces defects found in the patterns:
// each case failed before its fix, on the fake and on Azurite.
func RunPatternDefects(t *testing.T, env Env) {
	ctx := t.Context()
	t.Run("index core", func(t *testing.T) { runIndexCore(t, env) })
	t.Run("index entities: a change whose transaction's answer was lost", func(t *testing.T) { runIndexEntitiesChangeLost(t, env) })
	nickDef := func(c table.Client) patterns.IndexDef[Nicked] {
		return patterns.IndexDef[Nicked]{Name: "email", Table: copiesIn(c),
			PartitionKey: func(e *Nicked) string { return "email_" + e.Department },
			Value:        func(e *Nicked) string { return e.Email }}
	}

	// copies were upserted with Merge, so a property removed from the
	// primary stayed in every copy, and Repair (which merged too) could
	// not remove it.
	t.Run("inter-partition copies lose a property the primary lost", func(t *testing.T) {
		primary := env.NewTable(t, &reqcount.Counter{})
		copies := env.NewTable(t, &reqcount.Counter{})
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Nicked](primary, nil)), &patterns.ModelOptions[Nicked]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Nicked]{nickDef(copies)}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		if err := w.Handle(idx.MessageType(), idx.Process); err != nil {
			t.Fatal(err)
		}
		nick := "Donnie"
		v := &Nicked{Meta: table.Meta{PartitionKey: "empid_Sales", RowKey: "000123"}, Department: "Sales", Email: "donh@contoso.com", Nick: &nick}
		if err := idx.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		v.Nick = nil
		if err := idx.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if m := rawProps(t, copies, "email_Sales", crossKey(t, "donh@contoso.com", "empid_Sales", "000123")); m["Nick"] != nil {
			t.Fatalf("the copy kept Nick=%v after the primary lost it", m["Nick"])
		}
		// A copy left with an extra property (by an older writer) is stale,
		// and Repair removes the property.
		mergeInto(t, copies, "email_Sales", crossKey(t, "donh@contoso.com", "empid_Sales", "000123"), map[string]any{"Nick": "Old"})
		rep, err := verifyOf(ctx, idx, nil)
		if err != nil || len(rep.Stale) != 1 {
			t.Fatalf("Verify of a copy with a property the primary lacks: %+v, %v", rep, err)
		}
		if _, err := idx.Repair(ctx, repairOpts(rep, nil)); err != nil {
			t.Fatal(err)
		}
		if m := rawProps(t, copies, "email_Sales", crossKey(t, "donh@contoso.com", "empid_Sales", "000123")); m["Nick"] != nil {
			t.Fatalf("Repair left Nick=%v in the copy", m["Nick"])
		}
		if rep, err := verifyOf(ctx, idx, nil); err != nil || !rep.OK() {
			t.Fatalf("after Repair: %+v, %v", rep, err)
		}
	})

	// with the copies in the primary's own table, Verify read the
	// copies as primaries too, each expecting a copy of itself, and missed
	// a stale copy whenever the copies' partition sorts after the primaries'
	// ("mail_" after "empid_").
	t.Run("inter-partition Verify finds stale copies in the primary's table", func(t *testing.T) {
		primary := env.NewTable(t, &reqcount.Counter{})
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		// The primaries' RowKeys ("000123") all start with "000".
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Primary: "000", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{{Name: "email",
			PartitionKey: func(e *Emp) string { return "mail_" + e.Department },
			Value:        func(e *Emp) string { return e.Email }}}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		if err := w.Handle(idx.MessageType(), idx.Process); err != nil {
			t.Fatal(err)
		}
		for _, e := range []*Emp{emp("Sales", "000123", "Don", "Hall", "donh@contoso.com"), emp("Sales", "000223", "Ben", "Jones", "jonesj@contoso.com")} {
			if err := idx.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, q, w)
		if rep, err := verifyOf(ctx, idx, nil); err != nil || !rep.OK() {
			t.Fatalf("Verify of a healthy index: %+v, %v", rep, err)
		}
		mergeInto(t, primary, "mail_Sales", crossKey(t, "jonesj@contoso.com", "empid_Sales", "000223"), map[string]any{"FirstName": "Wrong"})
		rep, err := verifyOf(ctx, idx, nil)
		if err != nil || len(rep.Stale) != 1 || rep.Primaries != 2 || rep.IndexRows != 2 {
			t.Fatalf("Verify of a stale copy in the primary's table: %d stale, %d primaries (%+v), %v", len(rep.Stale), rep.Primaries, rep, err)
		}
		if _, err := idx.Repair(ctx, repairOpts(rep, nil)); err != nil {
			t.Fatal(err)
		}
		if rep, err := verifyOf(ctx, idx, nil); err != nil || !rep.OK() {
			t.Fatalf("after Repair: %+v, %v", rep, err)
		}
	})

	// Modify changed a shallow copy of the entity it read, so a change
	// made through a pointer changed the "current" version too, and the
	// old unique copy was left behind.
	t.Run("intra-partition Modify through a pointer removes the old unique copy", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		idx, err := patterns.OpenModel(ctx, tableOf(table.New[Pointed](client, nil)), &patterns.ModelOptions[Pointed]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[Pointed]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(p *Pointed) string {
				if p.Email == nil {
					return ""
				}
				return *p.Email
			}}}})

		if err != nil {
			t.Fatal(err)
		}
		email := "donh@contoso.com"
		if err := idx.Add(ctx, &Pointed{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, Email: &email}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Modify(ctx, "Sales", "empid_000123", func(p *Pointed) error {
			*p.Email = "don.hall@contoso.com"
			return nil
		}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Lookup(ctx, "email", "Sales", "donh@contoso.com", nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("the old unique copy survived Modify: %v", err)
		}
		if v, err := idx.Lookup(ctx, "email", "Sales", "don.hall@contoso.com", nil); err != nil || *v.Email != "don.hall@contoso.com" {
			t.Fatalf("the new unique copy: %v, %v", v, err)
		}
		if rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"}); err != nil || !rep.OK() {
			t.Fatalf("Verify after Modify: %+v, %v", rep, err)
		}
	})

	// parts were stored under "<rk>_p00", "_p01", … and read by the
	// prefix "<rk>_p", so another row or wide entity whose key starts that
	// way broke the wide entity, and a wide entity never written read as
	// the data of another.
	t.Run("wide entity parts collide with no other row", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		w := patterns.NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
		if err := w.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "g_p01", Properties: map[string]any{"Who": "g_p01"}}, nil); err != nil {
			t.Fatal(err)
		}
		if got, err := w.Get(ctx, "p", "g", false, nil); !table.Is(err, table.ErrNotFound) {
			t.Fatalf("Get of a wide entity never written: %+v, %v", got, err)
		}
		if err := w.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "a", Properties: map[string]any{"Who": "a"}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := client.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"a_p01","Who":"plain"}`), nil); err != nil {
			t.Fatal(err)
		}
		if err := w.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "a_p00", Properties: map[string]any{"Who": "a_p00"}}, nil); err != nil {
			t.Fatal(err)
		}
		for _, rk := range []string{"a", "a_p00", "g_p01"} {
			got, err := w.Get(ctx, "p", rk, false, nil)
			if err != nil || got.Properties["Who"] != rk || got.Parts != 1 {
				t.Fatalf("Get(%s) next to other rows: %+v, %v", rk, got, err)
			}
			if err := w.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: rk, Properties: map[string]any{"Who": rk, "N": int64(2)}}, nil); err != nil {
				t.Fatalf("Put(%s) next to other rows: %v", rk, err)
			}
		}
		if err := w.Delete(ctx, "p", "a", nil); err != nil {
			t.Fatal(err)
		}
		if m := rawProps(t, client, "p", "a_p01"); m["Who"] != "plain" {
			t.Fatalf("the plain row a_p01 changed: %v", m)
		}
		if got, err := w.Get(ctx, "p", "a_p00", false, nil); err != nil || got.Properties["N"] != int64(2) {
			t.Fatalf("Get(a_p00) after deleting a: %+v, %v", got, err)
		}
	})

	// keyrules.LogKeys held one "last tick" for all partitions and clamped
	// every earlier instant to it, so entries appended out of time order
	// got keys for other times, and Between missed them.
	t.Run("log tail: AppendAt out of order keeps every instant", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		log, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](client, nil)), &patterns.LogTailOptions{Writer: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		type entry struct {
			pk string
			at time.Time
		}
		var all []entry
		for i := range 200 {
			// Several entries share an instant, so equal ticks need unique keys.
			all = append(all, entry{pk: fmt.Sprintf("emp%d", i%4), at: base.Add(time.Duration(i/2) * time.Second)})
		}
		rand.New(rand.NewPCG(15, 8)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		for i, e := range all {
			if err := log.AppendAt(ctx, e.pk, e.at, &Claim{Amount: float64(i), Note: e.at.Format(time.RFC3339Nano)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		wrong, found := 0, 0
		for p := range 4 {
			pk := fmt.Sprintf("emp%d", p)
			for c, err := range log.Between(ctx, pk, base, base.Add(time.Hour), nil) {
				if err != nil {
					t.Fatal(err)
				}
				found++
				if at, err := keys.ParseInvertedTicks(c.RowKey); err != nil || at.Format(time.RFC3339Nano) != c.Note {
					wrong++
				}
			}
		}
		if wrong != 0 || found != len(all) {
			t.Fatalf("of %d entries appended out of order, Between found %d, %d under a key for another time", len(all), found, wrong)
		}
	})

	// Latest returned the first rows of the partition, log entries or
	// not; the guide puts a log beside other rows of its partition.
	t.Run("log tail: Latest returns log entries only in a shared partition", func(t *testing.T) {
		client := env.NewTable(t, &reqcount.Counter{})
		log, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](client, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := table.New[Claim](client, nil)
		for _, rk := range []string{"!profile", "0-summary", "2026-11"} {
			if err := plain.Add(ctx, &Claim{Meta: table.Meta{PartitionKey: "emp1", RowKey: rk}, Note: "not a log entry"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
		for i := range 3 {
			if err := log.AppendAt(ctx, "emp1", base.Add(time.Duration(i)*time.Minute), &Claim{Amount: float64(i), Note: "entry"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		latest, err := log.Latest(ctx, "emp1", 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, c := range latest {
			notes = append(notes, fmt.Sprintf("%s=%s", c.RowKey, c.Note))
		}
		if len(latest) != 2 || latest[0].Amount != 2 || latest[1].Amount != 1 || latest[0].Note != "entry" || latest[1].Note != "entry" {
			t.Fatalf("Latest(2) = %q", notes)
		}
		var since []string
		for c, err := range log.Since(ctx, "emp1", base, nil) {
			if err != nil {
				t.Fatal(err)
			}
			since = append(since, c.Note)
		}
		if len(since) != 3 || slices.Contains(since, "not a log entry") {
			t.Fatalf("Since = %q", since)
		}
	})

	// ReadLog (now BlobLog.Read) ignored its scanner's error, so a
	// blob it could not read to the end (here a line over its 8 MiB line
	// limit) ended the hour early without a word.
	t.Run("BlobLog.Read reports a blob it cannot read to the end", func(t *testing.T) {
		bc, container := env.NewContainer(t, nil)
		at := time.Date(2026, 11, 21, 10, 5, 0, 0, time.UTC)
		first, _ := json.Marshal(patterns.LogEntry{Time: at, Text: "first"})
		huge, _ := json.Marshal(patterns.LogEntry{Time: at.Add(time.Second), Text: strings.Repeat("x", 9<<20)})
		body := slices.Concat(first, []byte("\n"), huge, []byte("\n"))
		if _, err := bc.UploadBuffer(ctx, container, "applog/2026/11/21/1000/w-000001.log", body, nil); err != nil {
			t.Fatal(err)
		}
		log, err := patterns.NewBlobLog(bc, container, "applog", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var failed error
		for e, err := range log.Read(ctx, at.Add(-time.Minute), at.Add(time.Minute), nil) {
			if err != nil {
				failed = err
				break
			}
			got = append(got, e.Text)
		}
		if failed == nil {
			t.Fatalf("BlobLog.Read read %d entries of 2 and reported no error", len(got))
		}
	})

	// pattern errors named the wrong operation ("Lookup" for a
	// DataSeries.Get, "index" for an Add, a bare "Put" or "BlobIndex").
	// Every input error of a pattern names the pattern and the operation,
	// and is raised before any request.
	t.Run("pattern errors name the pattern and the operation", func(t *testing.T) {
		c := &reqcount.Counter{}
		client := env.NewTable(t, c)
		copies := env.NewTable(t, c)
		lists := env.NewTable(t, c)
		q := env.NewQueue(t, nil)
		bc, container := env.NewContainer(t, c)
		c.Reset()
		intra, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes(),
			Lists: []patterns.ListDef[Staff]{{Name: "lastname", Prefix: "lastname_", Value: func(s *Staff) string { return s.LastName }}}})
		if err != nil {
			t.Fatal(err)
		}
		inter, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](client, nil)), &patterns.ModelOptions[Emp]{Name: "inter", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{{Name: "email",
			Table: tableOf(table.New[table.Entity](copies, nil)), PartitionKey: func(e *Emp) string { return "email_" + e.Department }, Value: func(e *Emp) string { return e.Email }}},
			RemoteLists: []patterns.ListDef[Emp]{
				{Name: "remote", Value: func(e *Emp) string { return e.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lastnames", Prefix: "lname_"},
				{Name: "blobs", Value: func(e *Emp) string { return e.LastName }, Blobs: bc, Container: container, Prefix: "lname/"},
			}})
		if err != nil {
			t.Fatal(err)
		}
		wantRequests(t, c, 1, "opening the model with a Primary prefix (the read of its indexes' state)")
		series, _ := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](client, nil)), "D", 24)
		wide := patterns.NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
		badPK := "a/b"
		long := strings.Repeat("x", 600)
		cases := []struct {
			op   string
			call func() error
		}{
			{"Model.Add", func() error { return intra.Add(ctx, nil, nil) }},
			{"Model.Upsert", func() error { return intra.Upsert(ctx, nil, nil) }},
			{"Model.Add", func() error { return intra.Add(ctx, staff("000123", "A", "B", long, 1), nil) }},
			{"Model.Modify", func() error { _, err := intra.Modify(ctx, "Sales", "empid_1", nil, nil); return err }},
			{"Model.Lookup", func() error { _, err := intra.Lookup(ctx, "email", badPK, "a@b", nil); return err }},
			{"Model.Upsert", func() error { return inter.Upsert(ctx, nil, nil) }},
			{"Model.Upsert", func() error { return inter.Upsert(ctx, emp("Sales", "1", "A", "B", long), nil) }},
			{"Model.Delete", func() error { return inter.Delete(ctx, badPK, "r", nil) }},
			{"Model.Lookup", func() error { _, err := inter.Lookup(ctx, "email", badPK, "a@b", nil); return err }},
			{"Model.IDs", func() error { _, err := intra.IDs(ctx, "lastname", badPK, "Jones", nil); return err }},
			{"Model.IDs", func() error { _, err := intra.IDs(ctx, "lastname", "Sales", long, nil); return err }},
			{"Model.IDs", func() error { _, err := inter.IDs(ctx, "remote", "", long, nil); return err }},
			{"Model.IDs", func() error { _, err := inter.IDs(ctx, "blobs", "", strings.Repeat("x", 2000), nil); return err }},
			{"Model.Find", func() error { _, err := seqs.Collect(intra.Find(ctx, "lname", badPK, "Jones", nil)); return err }},
			{"Model.Range", func() error { _, err := seqs.Collect(inter.Range(ctx, "email", badPK, "a", "b", nil)); return err }},
			{"DataSeries.Get", func() error { _, _, err := series.Get(ctx, badPK, "r", nil); return err }},
			{"DataSeries.Set", func() error { _, err := series.Set(ctx, "p", "r", 99, 1, nil); return err }},
			{"WideEntity.Put", func() error {
				return wide.Put(ctx, &patterns.Wide{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"bad name": 1}}, nil)
			}},
			{"WideEntity.Get", func() error { _, err := wide.Get(ctx, badPK, "r", false, nil); return err }},
			{"WideEntity.Delete", func() error { return wide.Delete(ctx, badPK, "r", nil) }},
		}
		for _, tc := range cases {
			err := tc.call()
			var ie *table.InputError
			if !errors.As(err, &ie) || ie.Op != tc.op {
				t.Errorf("want an input error of %s, got %v", tc.op, err)
			}
		}
		wantRequests(t, c, 0, "bad input to the patterns")
	})

	// every index once sent its messages under one type, so two indexes
	// on one worker shared a handler slot: the second Handle replaced the
	// first, and the first index's messages were deleted unapplied. Each
	// model has its own type (from its Name).
	t.Run("two models share one queue and one worker", func(t *testing.T) {
		primary := env.NewTable(t, &reqcount.Counter{})
		copies := env.NewTable(t, &reqcount.Counter{})
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		byEmail, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "byemail", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{{Name: "email",
			Table: tableOf(table.New[table.Entity](copies, nil)), PartitionKey: func(e *Emp) string { return "email_" + e.Department },
			Value: func(e *Emp) string { return e.Email }}}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		byName, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "bylastname", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{{Name: "lastname",
			Table: tableOf(table.New[table.Entity](copies, nil)), PartitionKey: func(e *Emp) string { return "lname_" + e.Department },
			Value: func(e *Emp) string { return e.LastName + "_" + e.RowKey }}}, PublishDelay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if byEmail.MessageType() == byName.MessageType() {
			t.Fatalf("two models share the message type %s", byEmail.MessageType())
		}
		w := consistency.NewWorker(q, poison, quick(nil))
		for _, x := range []*patterns.Model[Emp]{byEmail, byName} {
			if err := w.Handle(x.MessageType(), x.Process); err != nil {
				t.Fatal(err)
			}
		}
		don := emp("Sales", "000123", "Don", "Hall", "donh@contoso.com")
		if err := byEmail.Add(ctx, don, nil); err != nil {
			t.Fatal(err)
		}
		ben := emp("Sales", "000223", "Ben", "Jones", "jonesj@contoso.com")
		if err := byName.Add(ctx, ben, nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if v, err := byEmail.Lookup(ctx, "email", "email_Sales", "donh@contoso.com", nil); err != nil || v.RowKey != "000123" {
			t.Fatalf("the first model's copy: %v, %v", v, err)
		}
		if v, err := byName.Lookup(ctx, "lastname", "lname_Sales", "Jones_000223", nil); err != nil || v.RowKey != "000223" {
			t.Fatalf("the second model's copy: %v, %v", v, err)
		}
		if n := queueLen(t, poison); n != 0 {
			t.Fatalf("%d messages in the poison queue", n)
		}
		if _, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "no spaces", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{{Name: "e",
			Table: tableOf(table.New[table.Entity](copies, nil)), PartitionKey: func(e *Emp) string { return "e" }, Value: func(e *Emp) string { return e.Email }}}}); !errors.Is(err, patterns.ErrBadDefinition) {
			t.Fatalf("a model name that makes no message type: %v", err)
		}
	})
}

// Pointed holds its indexed value behind a pointer.
type Pointed struct {
	table.Meta
	Email *string
}

// firstBatchLost passes its fault policy only the entity group
// transactions, so that "lose the first answer" means the first $batch's
// whatever reads and empty pages came before it.
type firstBatchLost struct{ p policy.Policy }

func (f firstBatchLost) Do(req *policy.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Raw().URL.Path, "$batch") {
		return f.p.Do(req)
	}
	return req.Next()
}

// runIndexEntitiesChangeLost: a Modify of a listed value whose
// transaction commits but whose answer is lost; the SDK's retry meets 412
// at operation 0 (the primary's ETag moved: by this very change). Modify
// reads again and finds its change stored: the lists hold the new value
// once, and the next change succeeds.
func runIndexEntitiesChangeLost(t *testing.T, env Env) {
	ctx := t.Context()
	gate := &gatedPolicy{p: firstBatchLost{faults.LoseResponse(1)}}
	client := env.NewTable(t, &reqcount.Counter{Faults: gate})
	ix, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "ix", Primary: "empid_",
		Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}})
	if err != nil {
		t.Fatal(err)
	}
	s := staff("000223", "Flora", "Jones", "fj@contoso.com", 30)
	if err := ix.Add(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	gate.on.Store(true)
	next, err := ix.Modify(ctx, s.PartitionKey, s.RowKey, func(v *Staff) error { v.LastName = "Hall"; return nil }, nil)
	gate.on.Store(false)
	if err != nil {
		t.Fatalf("Modify whose transaction's answer was lost: %v", err)
	}
	if next.ETag == "" || next.ETag == s.ETag {
		t.Fatalf("after the settled change, the value carries ETag %q (the first's: %q); want the stored one", next.ETag, s.ETag)
	}
	for value, want := range map[string]int{"Jones": 0, "Hall": 1} {
		ids, err := ix.IDs(ctx, "lname", s.PartitionKey, value, nil)
		if err != nil || len(ids) != want {
			t.Fatalf("IDs %s: %v, %v; want %d IDs", value, ids, err, want)
		}
	}
	// The next change starts from what Modify returned, and succeeds.
	again := *next
	again.LastName = "Jones"
	if err := ix.Update(ctx, &again, &table.UpdateOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		t.Fatalf("the change after the settled one: %v", err)
	}
}
