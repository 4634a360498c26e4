package fake

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// refRows is the model rows is checked against: one slice of every key,
// sorted in the service's order.
type refRows [][2]string

func (r refRows) find(pk, rk string) (int, bool) {
	return slices.BinarySearchFunc(r, [2]string{pk, rk}, func(a, b [2]string) int {
		if c := keyrules.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return keyrules.Compare(a[1], b[1])
	})
}

// checkRows fails t unless got holds exactly want's keys, in order, when
// walked with seek, at and next from the start and from every stored key
// and from keys between them, and get finds each.
func checkRows(t *testing.T, got *rows, want refRows) {
	t.Helper()
	if got.len() != len(want) {
		t.Fatalf("len %d, want %d", got.len(), len(want))
	}
	var walked refRows
	for c := got.seek("", ""); got.at(c) != nil; c = got.next(c) {
		e := got.at(c)
		walked = append(walked, [2]string{e.pk, e.rk})
	}
	if !slices.Equal(walked, want) {
		t.Fatalf("walked %v, want %v", walked, want)
	}
	for _, k := range want {
		if e := got.get(k[0], k[1]); e == nil || e.pk != k[0] || e.rk != k[1] {
			t.Fatalf("get(%q, %q) = %v", k[0], k[1], e)
		}
	}
	// Seeks at, just before and just after stored keys, and at keys of
	// partitions that hold nothing.
	probes := [][2]string{{"", ""}, {"\uffff", ""}}
	for _, k := range want {
		probes = append(probes, k, [2]string{k[0], k[1] + "\x00"}, [2]string{k[0], ""}, [2]string{k[0] + "\x00", ""})
	}
	for _, p := range probes {
		i, _ := want.find(p[0], p[1])
		e := got.at(got.seek(p[0], p[1]))
		switch {
		case i == len(want) && e != nil:
			t.Fatalf("seek(%q, %q) found %q %q, want the end", p[0], p[1], e.pk, e.rk)
		case i < len(want) && (e == nil || e.pk != want[i][0] || e.rk != want[i][1]):
			t.Fatalf("seek(%q, %q) found %v, want %q", p[0], p[1], e, want[i])
		}
	}
	if len(got.order) != len(got.parts) {
		t.Fatalf("%d partitions in order, %d by key", len(got.order), len(got.parts))
	}
	for _, p := range got.order {
		if len(p.rows) == 0 {
			t.Fatalf("partition %q is stored empty", p.pk)
		}
	}
}

// The partitioned rows hold, find and walk exactly what one sorted slice
// of every key would, through random puts and removes, and a
// transaction's partition copy changes nothing until adopted.
func TestRowsMatchOneSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Keys whose service order differs from Go's: a character above
	// U+FFFF sorts before one in U+E000-U+FFFF.
	alphabet := []string{"a", "b", "\U0001F600", "\uE000", "a'b", ""}
	key := func() string { return alphabet[rng.IntN(len(alphabet))] + alphabet[rng.IntN(len(alphabet))] }
	var got rows
	var want refRows
	for step := range 3000 {
		pk, rk := key(), key()
		switch i, found := want.find(pk, rk); {
		case rng.IntN(3) == 0:
			got.remove(pk, rk)
			if found {
				want = slices.Delete(want, i, i+1)
			}
		case rng.IntN(20) == 0:
			// A transaction on pk: some writes to a copy, then adopt or drop it.
			c := got.partitionCopy(pk)
			next := slices.Clone(want)
			if rng.IntN(4) == 0 {
				// Empty the partition.
				next = slices.DeleteFunc(next, func(k [2]string) bool {
					if k[0] == pk {
						c.remove(k[0], k[1])
					}
					return k[0] == pk
				})
			}
			for range rng.IntN(5) {
				rk := key()
				j, found := next.find(pk, rk)
				if rng.IntN(2) == 0 {
					c.remove(pk, rk)
					if found {
						next = slices.Delete(next, j, j+1)
					}
				} else {
					c.put(&entity{pk: pk, rk: rk})
					if !found {
						next = slices.Insert(next, j, [2]string{pk, rk})
					}
				}
			}
			if rng.IntN(2) == 0 {
				got.adopt(pk, c)
				want = next
			}
		default:
			got.put(&entity{pk: pk, rk: rk})
			if !found {
				want = slices.Insert(want, i, [2]string{pk, rk})
			}
		}
		if step%100 == 0 || step == 2999 {
			checkRows(t, &got, want)
		}
	}
}

// BenchmarkTableRows stores n entities (a busy load's row: two
// properties) over 1,000 partitions in random order, then reads each
// once and walks them all, reporting the heap each entity holds:
//
//	go test -run '^$' -bench BenchmarkTableRows -benchtime 1x ./fake/
func BenchmarkTableRows(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ks := make([][2]string, n)
			for i := range ks {
				ks[i] = [2]string{"p" + strconv.Itoa(i%1000), keyrules.Uint64(uint64(i))}
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
			for b.Loop() {
				before := heapInUse()
				var r rows
				for i, k := range ks {
					r.put(&entity{pk: string([]byte(k[0])), rk: k[1], etag: etagOf(time.Unix(int64(i), 0)), props: propsOf(map[string]value{
						"Payload": {typ: edmString, s: "the quick brown fox jumps over the lazy dog"},
						"N":       {typ: edmInt64, i: int64(i)},
					})})
				}
				b.ReportMetric(float64(heapInUse()-before)/float64(n), "bytes/entity")
				for _, k := range ks {
					if r.get(k[0], k[1]) == nil {
						b.Fatal("lost", k)
					}
				}
				seen := 0
				for c := r.seek("", ""); r.at(c) != nil; c = r.next(c) {
					seen++
				}
				if seen != n {
					b.Fatalf("walked %d of %d", seen, n)
				}
				runtime.KeepAlive(&r)
			}
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
