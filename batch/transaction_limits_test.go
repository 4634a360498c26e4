package batch_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/batchraw"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// A transaction holds at most 100 operations: the 101st is refused with
// ErrTooManyOperations, named by its index, and the transaction is left as
// it was.
func TestTransactionRefusesThe101stOperation(t *testing.T) {
	tx := batch.NewTransaction(nil)
	for i := range batch.MaxOperations {
		if err := tx.Append(batch.Delete("p", fmt.Sprint(i))); err != nil {
			t.Fatalf("operation %d: %v", i, err)
		}
	}
	size := tx.Size()
	err := tx.Append(batch.Delete("p", "extra"))
	var oe *batch.OpError
	if !errors.As(err, &oe) || !errors.Is(err, batch.ErrTooManyOperations) || oe.Index != 100 || oe.RowKey != "extra" || oe.Kind != batch.KindDelete {
		t.Fatalf("101st operation: %v", err)
	}
	if tx.Len() != 100 || tx.Size() != size {
		t.Fatalf("after the refusal: %d operations, size %d; want 100 and %d", tx.Len(), tx.Size(), size)
	}
}

// bulky is an entity of about 240 KB of JSON: eight strings under the
// service's 64 KiB string limit.
type bulky struct {
	table.Meta
	A, B, C, D, E, F, G, H string
}

func bulkyOp(rk string) batch.Op {
	s := strings.Repeat("x", 30_000)
	return batch.Add(&bulky{Meta: table.Meta{PartitionKey: "p", RowKey: rk}, A: s, B: s, C: s, D: s, E: s, F: s, G: s, H: s})
}

// padded is an entity of pad bytes of strings, up to 120,000.
type padded struct {
	table.Meta
	P0, P1, P2, P3 string
}

func paddedOp(rk string, pad int) batch.Op {
	v := &padded{Meta: table.Meta{PartitionKey: "p", RowKey: rk}}
	for _, p := range []*string{&v.P0, &v.P1, &v.P2, &v.P3} {
		n := min(pad, 30_000)
		*p, pad = strings.Repeat("y", n), pad-n
	}
	return batch.Add(v)
}

// opSize is what op adds to a transaction's Size.
func opSize(t *testing.T, op batch.Op) int {
	t.Helper()
	tx := batch.NewTransaction(nil)
	if err := tx.Append(op); err != nil {
		t.Fatal(err)
	}
	return tx.Size() - batch.NewTransaction(nil).Size()
}

// The request limit is exactly MaxRequestBytes, 4 MiB: a transaction whose
// size bound reaches it exactly takes the operation, and one byte more is
// refused with ErrTooLarge.
func TestTransactionSizeLimitIsExactly4MiB(t *testing.T) {
	if batch.MaxRequestBytes != 4*1024*1024 {
		t.Fatalf("MaxRequestBytes = %d, want 4 MiB", batch.MaxRequestBytes)
	}
	// fill returns a transaction of full bulky operations and the room left.
	fill := func() (*batch.Transaction, int) {
		tx := batch.NewTransaction(nil)
		each := opSize(t, bulkyOp("r000"))
		for i := 0; ; i++ {
			op := bulkyOp(fmt.Sprintf("r%03d", i))
			if tx.Size()+each > batch.MaxRequestBytes {
				return tx, batch.MaxRequestBytes - tx.Size()
			}
			if err := tx.Append(op); err != nil {
				t.Fatalf("operation %d of %d bytes, the transaction at %d: %v", i, each, tx.Size(), err)
			}
		}
	}
	tx, room := fill()
	if tx.Len() < 10 || room <= 0 {
		t.Fatalf("%d operations fill 4 MiB, %d bytes left", tx.Len(), room)
	}
	// The last operation's padding makes it exactly the room left.
	probe := opSize(t, paddedOp("last", 0))
	pad := room - probe
	if pad < 0 || pad >= 120_000 {
		t.Fatalf("%d bytes left after the bulky operations; a padded one takes %d to %d", room, probe, probe+120_000)
	}
	if err := tx.Append(paddedOp("last", pad)); err != nil || tx.Size() != batch.MaxRequestBytes {
		t.Fatalf("an operation filling the request to exactly 4 MiB: %v, size %d", err, tx.Size())
	}
	tx, _ = fill()
	err := tx.Append(paddedOp("last", pad+1))
	var oe *batch.OpError
	if !errors.Is(err, batch.ErrTooLarge) || !errors.As(err, &oe) || oe.RowKey != "last" || oe.Index != tx.Len() {
		t.Fatalf("one byte over 4 MiB: %v", err)
	}
}

// Upsert builds the operation its mode asks for, and the service does what
// that operation means: Merge keeps the stored properties the value does not
// have, Replace drops them.
func TestUpsertBuildsMergeOrReplace(t *testing.T) {
	if k := batch.Upsert(ev("p", 1), aztables.UpdateModeMerge).Kind; k != batch.KindUpsertMerge {
		t.Fatalf("Upsert(Merge) builds %v", k)
	}
	if k := batch.Upsert(ev("p", 1), aztables.UpdateModeReplace).Kind; k != batch.KindUpsertReplace {
		t.Fatalf("Upsert(Replace) builds %v", k)
	}
	if k := batch.Update(ev("p", 1), aztables.UpdateModeReplace).Kind; k != batch.KindUpdateReplace {
		t.Fatalf("Update(Replace) builds %v", k)
	}
	if k := batch.Update(ev("p", 1), aztables.UpdateModeMerge).Kind; k != batch.KindUpdateMerge {
		t.Fatalf("Update(Merge) builds %v", k)
	}

	_, client := newFake(t, nil)
	wide := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
	wide.Set("Extra", table.ValueOf("kept by a merge"))
	wide.Set("N", table.ValueOf(int64(1)))
	narrow := func() *table.Entity {
		e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
		e.Set("N", table.ValueOf(int64(2)))
		return e
	}
	stored := func() *table.Entity {
		t.Helper()
		resp, err := client.GetEntity(t.Context(), "p", "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		var e table.Entity
		if err := tableio.Unmarshal(resp.Value, &e); err != nil {
			t.Fatal(err)
		}
		return &e
	}
	for _, mode := range []aztables.UpdateMode{aztables.UpdateModeMerge, aztables.UpdateModeReplace} {
		if _, err := batch.Submit(t.Context(), client, []batch.Op{batch.Upsert(wide, aztables.UpdateModeReplace)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := batch.Submit(t.Context(), client, []batch.Op{batch.Upsert(narrow(), mode)}, nil); err != nil {
			t.Fatal(err)
		}
		e := stored()
		_, hasExtra := e.Get("Extra")
		n, _ := e.Get("N")
		if hasExtra != (mode == aztables.UpdateModeMerge) || n != table.ValueOf(int64(2)) {
			t.Fatalf("after an upsert with mode %v: Extra kept %v, N %v", mode, hasExtra, n)
		}
	}
}

// An update or upsert mode other than merge, replace or "" (merge) is
// refused before any request, as the SDK would refuse it only after the
// body was built.
func TestUnknownModeIsRefused(t *testing.T) {
	svc, client := newFake(t, nil)
	v := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r", ETag: "W/\"1\""}}
	for _, op := range []batch.Op{batch.Upsert(v, "Merge"), batch.Update(v, "patch")} {
		if _, err := batch.Submit(t.Context(), client, []batch.Op{op}, nil); !errors.Is(err, batch.ErrBadOperation) {
			t.Errorf("%v: %v, want ErrBadOperation", op.Kind, err)
		}
	}
	if n := svc.Total(); n != 0 {
		t.Errorf("%d requests for refused operations", n)
	}
	if k := batch.Upsert(v, "").Kind; k != batch.KindUpsertMerge {
		t.Errorf("an upsert with no mode is %v, want the SDK's default, merge", k)
	}
}

// Plan cuts a partition's operations into transactions of at most
// MaxOperations (100), the last one holding the rest.
func TestPlanMaxOperations(t *testing.T) {
	var ops []batch.Op
	for i := range 250 {
		ops = append(ops, batch.Delete("p", fmt.Sprint(i)))
	}
	txs, err := batch.Plan(ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for _, tx := range txs {
		lens = append(lens, tx.Len())
	}
	if fmt.Sprint(lens) != "[100 100 50]" || slicesMax(lens) != batch.MaxOperations {
		t.Fatalf("transactions of %v operations, want [100 100 50]", lens)
	}
}

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// Negative Writer options are refused before any request.
func TestWriterRefusesNegativeOptions(t *testing.T) {
	deadline(t, writerDeadline)
	for name, opts := range map[string]*batch.WriterOptions{
		"Parallelism": {Parallelism: -1},
		"MaxAttempts": {MaxAttempts: -1},
	} {
		svc, client := newFake(t, nil)
		_, err := batch.NewWriter(client, opts).Write(t.Context(), slices.Values(threeEvents()), nil)
		if !errors.Is(err, batch.ErrBadOption) || !strings.Contains(err.Error(), "WriterOptions."+name) {
			t.Fatalf("%s -1: %v, want ErrBadOption naming the option", name, err)
		}
		if n := svc.Total(); n != 0 {
			t.Fatalf("%s -1: %d requests", name, n)
		}
	}
}

// The zero Kind is no operation: an Op built with it is refused before any
// request, as an unknown kind is.
func TestZeroKindIsNoOperation(t *testing.T) {
	svc, client := newFake(t, nil)
	for _, k := range []batch.Kind{0, batch.KindDelete + 1} {
		_, err := batch.Submit(t.Context(), client, []batch.Op{batchraw.Op(k, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil)}, nil)
		if !errors.Is(err, batch.ErrBadOperation) {
			t.Errorf("Kind %d: %v, want ErrBadOperation", int(k), err)
		}
	}
	if n := svc.Total(); n != 0 {
		t.Errorf("%d requests for refused operations", n)
	}
}

// A raw operation names the keys of its entity, as a typed one does; a
// body that is not JSON names none, and is refused when appended.
func TestRawOperationKeys(t *testing.T) {
	op := batchraw.Op(batch.KindUpsertMerge, []byte(`{"PartitionKey":"p","RowKey":"r","N":1}`), nil)
	if op.PartitionKey() != "p" || op.RowKey() != "r" {
		t.Errorf("raw op keys %q/%q, want p/r", op.PartitionKey(), op.RowKey())
	}
	bad := batchraw.Op(batch.KindAdd, []byte(`not json`), nil)
	if bad.PartitionKey() != "" || bad.RowKey() != "" {
		t.Errorf("keys of a body that is not JSON: %q/%q", bad.PartitionKey(), bad.RowKey())
	}
	if err := batch.NewTransaction(nil).Append(bad); !errors.Is(err, table.ErrInvalidValue) {
		t.Errorf("appending a body that is not JSON: %v", err)
	}
}

// A value that is not a pointer to a struct embedding table.Meta is refused
// when appended, with the codec's rule.
func TestValueWithoutMetaIsRefused(t *testing.T) {
	type noMeta struct{ N int }
	for name, c := range map[string]struct {
		v    any
		rule error
	}{
		"no Meta":     {&noMeta{N: 1}, table.ErrNoMeta},
		"not pointer": {bulky{}, table.ErrNotStructPointer},
	} {
		err := batch.NewTransaction(nil).Append(batch.Add(c.v))
		var oe *batch.OpError
		if !errors.As(err, &oe) || !errors.Is(err, c.rule) || oe.Kind != batch.KindAdd {
			t.Errorf("%s: %v, want an OpError with %v", name, err, c.rule)
		}
	}
}
