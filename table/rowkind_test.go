package table_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// A Table of one row kind reads and writes that kind's RowKeys only, and
// keeps the one prefix it was given.
func TestOnlyRowPrefix(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
	}
	svc, client := newPatients(t)
	ctx := t.Context()
	all, _ := table.New[Employee](client, nil)
	for _, rk := range []string{"empid_000123", "email_don@contoso.com", "empid_000124"} {
		if err := all.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, Name: rk}, nil); err != nil {
			t.Fatal(err)
		}
	}
	emps, _ := table.New[Employee](client, nil)
	if err := tableio.For(emps).OnlyRowPrefix(""); !errors.Is(err, table.ErrBadOption) {
		t.Fatalf("an empty prefix: %v, want ErrBadOption", err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("empid_"); err != nil {
		t.Fatal(err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("empid_"); err != nil {
		t.Fatalf("the same prefix again: %v", err)
	}
	if err := tableio.For(emps).OnlyRowPrefix("email_"); !errors.Is(err, table.ErrBadOption) {
		t.Fatalf("another prefix: %v, want ErrBadOption", err)
	}
	got, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
	if err != nil || len(got) != 2 || got[0].RowKey != "empid_000123" || got[1].RowKey != "empid_000124" {
		t.Fatalf("Query: %v %v; want the two empid_ rows", got, err)
	}
	if n, err := seqs.Collect(all.Query(ctx, nil)); err != nil || len(n) != 3 {
		t.Fatalf("a Table of every row: %d rows %v", len(n), err)
	}
	svc.ResetCounts()
	if _, err := emps.Get(ctx, "Sales", "email_don@contoso.com", nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Get of another kind: %v, want ErrOtherRowKind", err)
	}
	if _, err := emps.Modify(ctx, "Sales", "email_don@contoso.com", func(*Employee) error { return nil }, nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Modify of another kind: %v, want ErrOtherRowKind", err)
	}
	if err := emps.Update(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com", ETag: "*"}}, nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Update of another kind: %v, want ErrOtherRowKind", err)
	}
	if _, err := tableio.For(emps).Stored(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com"}}); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Stored of another kind: %v, want ErrOtherRowKind", err)
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("refused operations sent %d requests", n)
	}
	if e, err := emps.Entities().Get(ctx, "Sales", "email_don@contoso.com", nil); err != nil || e.RowKey != "email_don@contoso.com" {
		t.Fatalf("the raw view reads every row: %v %v", e, err)
	}
}

// tablekitRows writes, through the raw view, the rows tablekit keeps
// beside a user's entities in partition "Sales": an index copy (marked
// TkIndexOf), an index entity, a model's control row and a build's
// checkpoint (marked TkKind), each in the shape patterns writes it.
func tablekitRows(t *testing.T, raw *table.Table[table.Entity]) []string {
	t.Helper()
	rows := []*table.Entity{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com"}},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "lname_Hall!0000"}},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "~tablekit.model.staff"}},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "~tablekit.build.staff.x.plan"}},
	}
	rows[0].Set("Name", table.ValueOf("Don Hall"))
	rows[0].Set("TkIndexOf", table.ValueOf("Sales!empid_000123!"))
	rows[1].Set("Value", table.ValueOf("Hall"))
	rows[1].Set("IDs00", table.ValueOf(`["empid_000123"]`))
	rows[1].Set("TkKind", table.ValueOf("list"))
	rows[2].Set("State", table.ValueOf(`{"format":1}`))
	rows[2].Set("TkKind", table.ValueOf("control"))
	rows[3].Set("Lo", table.ValueOf(""))
	rows[3].Set("TkKind", table.ValueOf("checkpoint"))
	var rks []string
	for _, e := range rows {
		if err := raw.Add(t.Context(), e, nil); err != nil {
			t.Fatal(err)
		}
		rks = append(rks, e.RowKey)
	}
	return rks
}

// A Table of any type but Entity never yields, returns or modifies a row
// tablekit marks as another kind (an index copy, an index entity, a
// control or checkpoint row), whichever handle reads the table: Query,
// QueryPage and QueryAs skip them, Get, Modify and Stored refuse them
// with ErrOtherRowKind. The raw view reads them all.
func TestTypedHandleSkipsTablekitRows(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
	}
	type NameOnly struct {
		table.Meta
		Name string
	}
	_, client := newPatients(t)
	ctx := t.Context()
	emps, _ := table.New[Employee](client, nil)
	marked := tablekitRows(t, emps.Entities())
	for _, rk := range []string{"empid_000123", "empid_000124"} {
		if err := emps.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, Name: rk}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A property that merely holds a marker's name marks nothing.
	odd := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000125"}}
	odd.Set("Name", table.ValueOf("TkKind"))
	if err := emps.Entities().Add(ctx, odd, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"empid_000123", "empid_000124", "empid_000125"}
	keysOf := func(ms []*table.Meta) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.RowKey)
		}
		return out
	}
	got, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
	var ms []*table.Meta
	for _, e := range got {
		ms = append(ms, &e.Meta)
	}
	if err != nil || !slices.Equal(keysOf(ms), want) {
		t.Fatalf("Query: %q %v; want the employees %q only", keysOf(ms), err, want)
	}
	// One entity a page: the pages of marked rows come back empty, with
	// a continuation, and the query still reaches every employee.
	ms, pages, token := nil, 0, ""
	for {
		p, err := emps.QueryPage(ctx, token, &table.QueryOptions{Top: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Items {
			ms = append(ms, &e.Meta)
		}
		pages++
		if token = p.Next; token == "" {
			break
		}
	}
	if !slices.Equal(keysOf(ms), want) || pages < len(want)+len(marked) {
		t.Fatalf("QueryPage with Top 1: %q in %d pages; want %q in at least %d", keysOf(ms), pages, want, len(want)+len(marked))
	}
	names, err := seqs.Collect(table.QueryAs[NameOnly](ctx, emps, nil))
	ms = nil
	for _, e := range names {
		ms = append(ms, &e.Meta)
	}
	if err != nil || !slices.Equal(keysOf(ms), want) {
		t.Fatalf("QueryAs: %q %v; want %q", keysOf(ms), err, want)
	}
	if top, err := seqs.Collect(emps.Query(ctx, &table.QueryOptions{Top: 2})); err != nil || len(top) != 2 || top[0].RowKey != "empid_000123" || top[1].RowKey != "empid_000124" {
		t.Fatalf("Query with Top 2: %v %v; want the first two employees", top, err)
	}
	for _, rk := range marked {
		if v, err := emps.Get(ctx, "Sales", rk, nil); !errors.Is(err, table.ErrOtherRowKind) {
			t.Errorf("Get of %s: %+v %v; want ErrOtherRowKind", rk, v, err)
		}
		if v, err := emps.Modify(ctx, "Sales", rk, func(e *Employee) error { e.Name = "x"; return nil }, nil); !errors.Is(err, table.ErrOtherRowKind) {
			t.Errorf("Modify of %s: %+v %v; want ErrOtherRowKind", rk, v, err)
		}
		if ok, err := tableio.For(emps).Stored(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}}); ok || err != nil {
			t.Errorf("Stored of %s: %v %v; want false", rk, ok, err)
		}
	}
	all, err := seqs.Collect(emps.Entities().Query(ctx, nil))
	if err != nil || len(all) != len(want)+len(marked) {
		t.Fatalf("the raw view: %d rows %v; want all %d", len(all), err, len(want)+len(marked))
	}
}

// An encrypted type's handle skips the marked rows (which hold clear
// properties only, no envelope) instead of failing the query with an
// integrity error, and refuses a Get of one with ErrOtherRowKind.
func TestEncryptedHandleSkipsTablekitRows(t *testing.T) {
	_, client := newPatients(t)
	ctx := t.Context()
	tb := encrypted(t, client, "k1", table.LocalKeys{"k1": keyOf(1)})
	marked := tablekitRows(t, tb.Entities())
	d := don()
	d.RowKey = "empid_000123"
	if err := tb.Add(ctx, d, nil); err != nil {
		t.Fatal(err)
	}
	got, err := seqs.Collect(tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("Sales")}))
	if err != nil || len(got) != 1 || got[0].RowKey != "empid_000123" || got[0].Salary != d.Salary {
		t.Fatalf("Query: %v %v; want empid_000123 alone, decrypted", got, err)
	}
	for _, rk := range marked {
		if v, err := tb.Get(ctx, "Sales", rk, nil); !errors.Is(err, table.ErrOtherRowKind) || errors.Is(err, table.ErrIntegrity) {
			t.Errorf("Get of %s: %+v %v; want ErrOtherRowKind", rk, v, err)
		}
	}
}

// The marking properties are reserved: a type that would store a field
// under one is refused by New, since its own rows would read as another
// kind's.
func TestMarkingPropertiesAreReserved(t *testing.T) {
	type copyRef struct {
		table.Meta
		TkIndexOf string
	}
	type kind struct {
		table.Meta
		K string `table:"TkKind"`
	}
	_, client := newPatients(t)
	if _, err := table.New[copyRef](client, nil); !errors.Is(err, table.ErrUnsupportedType) {
		t.Errorf("a TkIndexOf field: %v, want ErrUnsupportedType", err)
	}
	if _, err := table.New[kind](client, nil); !errors.Is(err, table.ErrUnsupportedType) {
		t.Errorf("a field stored as TkKind: %v, want ErrUnsupportedType", err)
	}
}

// A Registry decodes no row tablekit keeps beside the entities as a
// registered type, though an index copy carries its primary's EntityType:
// Query leaves such rows out, Decode refuses them with ErrOtherRowKind.
func TestRegistrySkipsTablekitRows(t *testing.T) {
	type Employee struct {
		table.Meta
		Name string
	}
	_, client := newPatients(t)
	ctx := t.Context()
	raw, _ := table.New[table.Entity](client, nil)
	primary := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}}
	primary.Set("EntityType", table.ValueOf("emp"))
	primary.Set("Name", table.ValueOf("Don"))
	cp := &table.Entity{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_don@contoso.com"}}
	cp.Set("EntityType", table.ValueOf("emp"))
	cp.Set("Name", table.ValueOf("Don"))
	cp.Set("TkIndexOf", table.ValueOf("Sales!empid_000123!"))
	for _, e := range []*table.Entity{primary, cp} {
		if err := raw.Add(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := table.NewRegistry(&table.RegistryOptions{Generic: true})
	if err := table.Register[Employee](r, "emp"); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []*table.QueryOptions{nil, {Select: []string{"EntityType", "Name"}}} {
		var got []string
		for v, err := range r.Query(ctx, client, opts) {
			if err != nil {
				t.Fatal(err)
			}
			e, ok := v.(*Employee)
			if !ok {
				t.Fatalf("Registry.Query yielded %T %+v", v, v)
			}
			got = append(got, e.RowKey)
		}
		if !slices.Equal(got, []string{"empid_000123"}) {
			t.Fatalf("Registry.Query (%+v): %q; want the employee alone", opts, got)
		}
	}
	if v, err := r.Decode([]byte(`{"PartitionKey":"Sales","RowKey":"email_x","EntityType":"emp","TkIndexOf":"Sales!empid_1!"}`)); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("Decode of a copy: %+v %v; want ErrOtherRowKind", v, err)
	}
}

// A Table of a pattern's kind marks every row it writes with the kind,
// reads those rows alone, and keeps the one kind it was given; a Table of
// the user's entities leaves the marked rows out.
func TestOnlyKind(t *testing.T) {
	type Entry struct {
		table.Meta
		Who string
	}
	_, client := newPatients(t)
	ctx := t.Context()
	plain, _ := table.New[Entry](client, nil)
	if err := plain.Add(ctx, &Entry{Meta: table.Meta{PartitionKey: "p", RowKey: "user"}, Who: "user"}, nil); err != nil {
		t.Fatal(err)
	}
	logs, _ := table.New[Entry](client, nil)
	if err := tableio.For(logs).OnlyKind("log"); err != nil {
		t.Fatal(err)
	}
	if err := tableio.For(logs).OnlyKind("log"); err != nil {
		t.Fatalf("the same kind again: %v", err)
	}
	for _, other := range []string{"shard", ""} {
		if err := tableio.For(logs).OnlyKind(other); !errors.Is(err, table.ErrBadOption) {
			t.Fatalf("kind %q after log: %v, want ErrBadOption", other, err)
		}
	}
	if err := tableio.For(plain.Entities()).OnlyKind("log"); !errors.Is(err, table.ErrBadOption) {
		t.Fatalf("a kind for the raw view: %v, want ErrBadOption", err)
	}
	e := &Entry{Meta: table.Meta{PartitionKey: "p", RowKey: "entry"}, Who: "w"}
	if err := logs.Add(ctx, e, &table.AddOptions{Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	if ok, err := tableio.For(logs).Stored(ctx, e); err != nil || !ok {
		t.Fatalf("Stored of the marked row as written: %v %v, want true", ok, err)
	}
	raw, err := plain.Entities().Get(ctx, "p", "entry", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := raw.Get("TkKind"); !ok || k.String() != `"log"` {
		t.Fatalf("the stored row's TkKind: %v %v, want \"log\"", k, ok)
	}
	if got, err := seqs.Collect(logs.Query(ctx, nil)); err != nil || len(got) != 1 || got[0].Who != "w" {
		t.Fatalf("the log's Query: %v %v; want the entry alone", got, err)
	}
	if got, err := seqs.Collect(plain.Query(ctx, nil)); err != nil || len(got) != 1 || got[0].Who != "user" {
		t.Fatalf("a plain Query: %v %v; want the user's row alone", got, err)
	}
	if _, err := logs.Get(ctx, "p", "user", nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("the log's Get of the user's row: %v, want ErrOtherRowKind", err)
	}
	if _, err := plain.Get(ctx, "p", "entry", nil); !errors.Is(err, table.ErrOtherRowKind) {
		t.Fatalf("a plain Get of the entry: %v, want ErrOtherRowKind", err)
	}
}

// fullEntity declares table.MaxUserProperties properties, the service's
// limit besides PartitionKey, RowKey and Timestamp.
type fullEntity struct {
	table.Meta
	P000, P001, P002, P003, P004, P005, P006, P007, P008, P009, P010, P011,
	P012, P013, P014, P015, P016, P017, P018, P019, P020, P021, P022, P023,
	P024, P025, P026, P027, P028, P029, P030, P031, P032, P033, P034, P035,
	P036, P037, P038, P039, P040, P041, P042, P043, P044, P045, P046, P047,
	P048, P049, P050, P051, P052, P053, P054, P055, P056, P057, P058, P059,
	P060, P061, P062, P063, P064, P065, P066, P067, P068, P069, P070, P071,
	P072, P073, P074, P075, P076, P077, P078, P079, P080, P081, P082, P083,
	P084, P085, P086, P087, P088, P089, P090, P091, P092, P093, P094, P095,
	P096, P097, P098, P099, P100, P101, P102, P103, P104, P105, P106, P107,
	P108, P109, P110, P111, P112, P113, P114, P115, P116, P117, P118, P119,
	P120, P121, P122, P123, P124, P125, P126, P127, P128, P129, P130, P131,
	P132, P133, P134, P135, P136, P137, P138, P139, P140, P141, P142, P143,
	P144, P145, P146, P147, P148, P149, P150, P151, P152, P153, P154, P155,
	P156, P157, P158, P159, P160, P161, P162, P163, P164, P165, P166, P167,
	P168, P169, P170, P171, P172, P173, P174, P175, P176, P177, P178, P179,
	P180, P181, P182, P183, P184, P185, P186, P187, P188, P189, P190, P191,
	P192, P193, P194, P195, P196, P197, P198, P199, P200, P201, P202, P203,
	P204, P205, P206, P207, P208, P209, P210, P211, P212, P213, P214, P215,
	P216, P217, P218, P219, P220, P221, P222, P223, P224, P225, P226, P227,
	P228, P229, P230, P231, P232, P233, P234, P235, P236, P237, P238, P239,
	P240, P241, P242, P243, P244, P245, P246, P247, P248, P249, P250, P251 string
}

// TestOnlyKindCountsTheMark: a pattern's rows carry TkKind, one property
// more than T declares, so a type that fills the service's limit is
// refused when a pattern claims its Table, before any request, while the
// model's kind, which writes no mark, still takes it.
func TestOnlyKindCountsTheMark(t *testing.T) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("full", nil)
	claim := func(kind string) error {
		tbl, err := table.New[fullEntity](client, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tableio.For(tbl).OnlyKind(kind)
	}
	if err := claim("log"); !errors.Is(err, table.ErrTooManyProperties) {
		t.Fatalf("a pattern's kind over %d fields: %v, want ErrTooManyProperties", table.MaxUserProperties, err)
	}
	if err := claim(""); err != nil {
		t.Fatalf("the model's kind over %d fields: %v, want nil", table.MaxUserProperties, err)
	}
	if n := svc.Total(); n != 0 {
		t.Fatalf("%d requests, want 0", n)
	}
}
