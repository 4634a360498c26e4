package integration

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// RunModelCompose puts an entity model (with copies and lists under a
// Primary prefix, and without a prefix, which allows no index in its
// table) in one table
// with every other pattern that stores rows there (a log tail and sharded
// appends of another type, a data series, a wide entity, a large entity
// of another type), in the model's partitions and, where a pattern takes
// the RowKey, under the model's Primary prefix. The model's reads, a second
// handle of its type, Verify, Repair and Build must see the primaries
// only, and each pattern must still read back its own rows and nothing
// else.
func RunModelCompose(t *testing.T, env Env) {
	for _, primary := range []string{"", "empid_"} {
		t.Run(fmt.Sprintf("Primary %q", primary), func(t *testing.T) { composeCase(t, env, primary) })
	}
}

func composeCase(t *testing.T, env Env, primary string) {
	ctx := t.Context()
	client := env.NewTable(t, &reqcount.Counter{})
	bc, container := env.NewContainer(t, nil)
	// The index values are never empty, so a row of another kind taken
	// for a primary would be indexed (or found unindexed) too.
	opts := &patterns.ModelOptions[DirEmp]{Name: "staff", Primary: primary}
	var q, poison = env.NewQueue(t, nil), env.NewQueue(t, nil)
	if primary != "" {
		// Copies and Lists, which live beside the primaries, need the
		// Primary prefix; so does Build.
		opts.Copies = []patterns.IndexDef[DirEmp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *DirEmp) string { return "m" + e.Email }}}
		opts.Lists = []patterns.ListDef[DirEmp]{{Name: "lname", Prefix: "lname_", Value: func(e *DirEmp) string { return "n" + e.LastName }}}
		opts.Queue, opts.StateRefresh = q, 500*time.Millisecond
	}
	m, err := patterns.OpenModel(ctx, tableOf(table.New[DirEmp](client, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	log, err := patterns.NewLogTail(tableOf(table.New[Login](client, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := patterns.NewSharded(tableOf(table.New[Login](client, nil)), "Sales", 2)
	if err != nil {
		t.Fatal(err)
	}
	series, err := patterns.NewDataSeries[int32](tableOf(table.New[table.Entity](client, nil)), "H", 24)
	if err != nil {
		t.Fatal(err)
	}
	wide := patterns.NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
	large, err := patterns.NewLargeEntity(tableOf(table.New[Profile](client, nil)), bc, container, []string{"Photo"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The primaries: two in partition Sales, one in each shard's partition.
	partitions := append([]string{"Sales"}, shards.Partitions()...)
	var want []string
	for i, pk := range append([]string{"Sales"}, partitions...) {
		e := &DirEmp{Meta: table.Meta{PartitionKey: pk, RowKey: fmt.Sprintf("empid_%06d", i)}, FirstName: fmt.Sprintf("F%d", i), LastName: "Hall", Email: fmt.Sprintf("e%d@contoso.com", i), Salary: 1000 + i}
		if err := m.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, pk+"/"+e.RowKey)
	}
	slices.Sort(want)

	// The other patterns' rows, in the same partitions; the RowKeys a
	// pattern takes from its caller lie under the Primary prefix.
	key := func(s string) string { return "empid_" + s }
	for i := range 2 {
		if err := log.AppendAt(ctx, "Sales", time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), &Login{Who: fmt.Sprintf("w%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, who := range []string{"a", "b", "c", "d"} {
		if err := shards.Append(ctx, who, &Login{Meta: table.Meta{RowKey: key(fmt.Sprintf("login%02d", i))}, Who: who}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := series.SetMany(ctx, "Sales", key("series"), map[int]int32{0: 7, 23: 9}, nil); err != nil {
		t.Fatal(err)
	}
	props := map[string]any{}
	for i := range 300 {
		props[fmt.Sprintf("P%03d", i)] = int32(i)
	}
	if err := wide.Put(ctx, &patterns.Wide{PartitionKey: "Sales", RowKey: key("wide"), Properties: props}, nil); err != nil {
		t.Fatal(err)
	}
	photo := bytes.Repeat([]byte{0xff, 0xd8}, 40000)
	if err := large.Put(ctx, &Profile{Meta: table.Meta{PartitionKey: "Sales", RowKey: key("profile")}, Name: "Don Hall", Photo: photo}, nil); err != nil {
		t.Fatal(err)
	}
	raw := tableOf(table.New[table.Entity](client, nil))
	rawKeys := func() []string {
		all, err := seqs.Collect(raw.Query(ctx, nil))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range all {
			out = append(out, e.PartitionKey+"/"+e.RowKey)
		}
		return out
	}
	before := rawKeys()

	keysOf := func(name string, q func() ([]*DirEmp, error)) {
		t.Helper()
		got, err := q()
		var ks []string
		for _, e := range got {
			ks = append(ks, e.PartitionKey+"/"+e.RowKey)
		}
		slices.Sort(ks)
		if err != nil || !slices.Equal(ks, want) {
			t.Errorf("%s yielded %q, %v; want exactly the primaries %q", name, ks, err, want)
		}
	}
	keysOf("Model.Query of the table", func() ([]*DirEmp, error) { return seqs.Collect(m.Query(ctx, nil)) })
	keysOf("Model.Query of partition Sales and the shards'", func() ([]*DirEmp, error) {
		var out []*DirEmp
		for _, pk := range partitions {
			got, err := seqs.Collect(m.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}))
			if err != nil {
				return out, err
			}
			out = append(out, got...)
		}
		return out, nil
	})
	keysOf("a second table.New handle's Query", func() ([]*DirEmp, error) {
		return seqs.Collect(tableOf(table.New[DirEmp](client, nil)).Query(ctx, nil))
	})

	// A model without indexes has nothing to verify and reads no primary.
	nPrimaries := len(want)
	if primary == "" {
		nPrimaries = 0
	}
	sum, err := m.Verify(ctx, nil)
	if err != nil || !sum.OK() || sum.Primaries != nPrimaries {
		t.Errorf("Verify of a clean table: %+v %v; want no issue and %d primaries", sum, err, nPrimaries)
	}
	rep, err := m.Repair(ctx, nil)
	if err != nil || rep.Written != 0 || rep.Deleted != 0 || rep.Primaries != nPrimaries {
		t.Errorf("Repair of a clean table: %+v %v; want nothing written or deleted and %d primaries", rep, err, nPrimaries)
	}
	if after := rawKeys(); !slices.Equal(after, before) {
		t.Errorf("Repair changed the table's rows:\n before %q\n after  %q", before, after)
	}

	// Each pattern reads back its own rows, and only them.
	if got, err := log.Latest(ctx, "Sales", 10, nil); err != nil || len(got) != 2 || got[0].Who != "w1" || got[1].Who != "w0" {
		t.Errorf("LogTail.Latest: %d entries %v; want w1 and w0", len(got), err)
	}
	var read []string
	for v, err := range shards.Read(ctx, nil) {
		if err != nil {
			t.Fatalf("Sharded.Read: %v", err)
		}
		read = append(read, v.Who)
	}
	if !slices.Equal(read, []string{"a", "b", "c", "d"}) {
		t.Errorf("Sharded.Read yielded %q; want the appends a, b, c, d and no employee of the shards' partitions", read)
	}
	if vals, _, err := series.Get(ctx, "Sales", key("series"), nil); err != nil || len(vals) != 2 || vals[0] != 7 || vals[23] != 9 {
		t.Errorf("DataSeries.Get: %v %v; want slots 0 and 23", vals, err)
	}
	if w, err := wide.Get(ctx, "Sales", key("wide"), false, nil); err != nil || len(w.Properties) != 300 {
		t.Errorf("WideEntity.Get: %v; want 300 properties", err)
	}
	if p, err := large.Get(ctx, "Sales", key("profile"), nil); err != nil || !bytes.Equal(p.Photo, photo) {
		t.Errorf("LargeEntity.Get: %v; want the photo back", err)
	}

	// The model's handle is the primaries': a pattern that would write
	// the model's type through it, around its indexes, is refused before
	// any request.
	if _, err := patterns.NewLargeEntity(m.Table(), bc, container, []string{"Email"}, 0, nil); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("NewLargeEntity over the model's handle: %v; want ErrBadDefinition", err)
	}
	if _, err := patterns.NewLogTail(m.Table(), nil); !errors.Is(err, patterns.ErrBadDefinition) {
		t.Errorf("NewLogTail over the model's handle: %v; want ErrBadDefinition", err)
	}
	// A pattern's point read of another kind's row is refused.
	if _, _, err := series.Get(ctx, "Sales", key("profile"), nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Errorf("DataSeries.Get of the large entity's row: %v; want ErrOtherRowKind", err)
	}
	if _, err := large.Get(ctx, "Sales", key("series"), nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Errorf("LargeEntity.Get of the series' row: %v; want ErrOtherRowKind", err)
	}
	if _, err := log.Table().Get(ctx, "Sales", key("000000"), nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Errorf("the log's handle's Get of an employee: %v; want ErrOtherRowKind", err)
	}

	if primary == "" {
		return
	}
	// Build of a new index indexes the primaries only: no copy of a
	// log entry, a shard's append, a series, a wide entity's part or a
	// large entity.
	opts.Copies = append(opts.Copies, patterns.IndexDef[DirEmp]{Name: "first", Prefix: "first_", Value: func(e *DirEmp) string { return "f" + e.FirstName }})
	m2, err := patterns.OpenModel(ctx, tableOf(table.New[DirEmp](client, nil)), opts)
	if err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWorker(q, poison, quick(nil))
	if err := w.Handle(m2.MessageType(), m2.Process); err != nil {
		t.Fatal(err)
	}
	if err := m2.Build(ctx, "first", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		drainAll(t, q, w)
		st, err := m2.IndexStatus(ctx, "first", nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == patterns.IndexActive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build of first did not finish: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var copies []string
	for _, k := range rawKeys() {
		if _, rk, _ := cutKey(k); len(rk) > 6 && rk[:6] == "first_" {
			copies = append(copies, k)
		}
	}
	if len(copies) != len(want) {
		t.Errorf("Build of first wrote %d copies %q; want one per primary (%d)", len(copies), copies, len(want))
	}
	if sum, err := m2.Verify(ctx, nil); err != nil || !sum.OK() || sum.Primaries != len(want) {
		t.Errorf("Verify after the build: %+v %v; want no issue and %d primaries", sum, err, len(want))
	}
}

// cutKey splits "pk/rk".
func cutKey(k string) (pk, rk string, ok bool) {
	i := bytes.IndexByte([]byte(k), '/')
	if i < 0 {
		return k, "", false
	}
	return k[:i], k[i+1:], true
}
