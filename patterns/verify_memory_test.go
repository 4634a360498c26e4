package patterns_test

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// memRow is a primary of the memory measurements: a few hundred bytes.
type memRow struct {
	table.Meta
	Email, LastName, Note string
}

// memModel is a model with a copies index and a list index over a table
// of n primaries in partitions of 100, written around the model: every
// primary lacks its copy and its list entry, so Verify finds two issues
// per primary, 2n in all, and streams them.
func memModel(tb testing.TB, n int) *patterns.Model[memRow] {
	tb.Helper()
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("mem", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	note := strings.Repeat("n", 200)
	rows := func(yield func(batch.Op) bool) {
		for i := range n {
			v := &memRow{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%05d", i/100), RowKey: fmt.Sprintf("empid_%07d", i)},
				Email: fmt.Sprintf("e%07d@contoso.com", i), LastName: fmt.Sprintf("L%03d", i%37), Note: note}
			if !yield(batch.Upsert(v, aztables.UpdateModeReplace)) {
				return
			}
		}
	}
	if _, err := batch.NewWriter(client, nil).Write(ctx, iter.Seq[batch.Op](rows), nil); err != nil {
		tb.Fatal(err)
	}
	m, err := patterns.OpenModel(ctx, tableOf(table.New[memRow](client, nil)), &patterns.ModelOptions[memRow]{Name: "mem", Primary: "empid_",
		Copies: []patterns.IndexDef[memRow]{{Name: "email", Prefix: "email_", Unique: true, Value: func(v *memRow) string { return v.Email }}},
		Lists:  []patterns.ListDef[memRow]{{Name: "lastname", Prefix: "lastname_", Value: func(v *memRow) string { return v.LastName }}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// liveHeap is the heap in use after a collection: what is still reachable.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// verifyPeak runs m's Verify and returns its summary and the most live
// heap it held above what was live before it began (the fake's table
// included there), sampled after a collection every 5,000 issues and at
// every progress report (each 1,000 rows read).
func verifyPeak(tb testing.TB, m *patterns.Model[memRow]) (patterns.VerifySummary, uint64) {
	tb.Helper()
	base := liveHeap()
	var peak uint64
	sample := func() {
		if h := liveHeap(); h > base && h-base > peak {
			peak = h - base
		}
	}
	issues := 0
	sum, err := m.Verify(context.Background(), &patterns.VerifyOptions{
		Issue: func(patterns.IndexIssue) error {
			if issues++; issues%5000 == 0 {
				sample()
			}
			return nil
		},
		Progress: func(int) { sample() },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return sum, peak
}

// Verify holds a range at a time, not the table: over ten times the
// primaries (and ten times the issues, all streamed), the most heap it
// keeps live stays within a small factor of the smaller table's.
func TestVerifyMemoryDoesNotGrowWithTheTable(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 22,000 entities")
	}
	var peaks [2]uint64
	for i, n := range []int{2_000, 20_000} {
		m := memModel(t, n)
		sum, peak := verifyPeak(t, m)
		if sum.Primaries != n || sum.Missing != 2*n || sum.IndexRows != 0 || sum.ByIndex["email"][patterns.IssueMissing] != n || sum.ByIndex["lastname"][patterns.IssueMissing] != n {
			t.Fatalf("Verify of %d: %+v; want %d primaries and each missing its copy and its list entry", n, sum, n)
		}
		peaks[i] = peak
		t.Logf("Verify of %d primaries (%d issues streamed): peak live heap above the start %d KiB", n, sum.Missing, peak>>10)
	}
	// 4x leaves room for the collector's timing; a table held whole would
	// be 10x.
	if peaks[1] > 4*peaks[0]+(1<<20) {
		t.Fatalf("peak live heap %d KiB over 20,000 primaries against %d KiB over 2,000: it grows with the table", peaks[1]>>10, peaks[0]>>10)
	}
}

// BenchmarkModelVerifyMemory reports the most heap a Verify keeps live
// over 5,000 and 50,000 primaries (every one missing its two index rows),
// as peak-live-B/op.
func BenchmarkModelVerifyMemory(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("primaries=%d", n), func(b *testing.B) {
			m := memModel(b, n)
			var peak uint64
			for b.Loop() {
				_, p := verifyPeak(b, m)
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak), "peak-live-B/op")
		})
	}
}
