package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/faults"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// faultRun is one run of a pattern's scenario: every client it makes
// shares one counter and one fault injector behind a gate, so resources
// are created fault-free, the scenario runs under faults, and the final
// state is read fault-free.
type faultRun struct {
	t      *testing.T
	env    Env
	svc    func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient
	faulty bool
	inj    *faults.Injector
	gate   *gatedPolicy
	c      *reqcount.Counter
	ops    int      // pattern operations the scenario ran
	redone int      // of which the scenario had to run again
	errs   []string // the first errors it saw
}

func (r *faultRun) table() *aztables.Client { return r.env.NewTable(r.t, r.c) }
func (r *faultRun) queue() *azqueue.QueueClient {
	return r.env.NewQueue(r.t, r.c)
}
func (r *faultRun) container() (*azblob.Client, string) { return r.env.NewContainer(r.t, r.c) }
func (r *faultRun) service() *aztables.ServiceClient    { return r.svc(r.t, r.c) }

// drain runs the worker under the faults until the queue is empty, shuts
// the faults out, and requires that nothing was poisoned.
func (r *faultRun) drain(q, poison *azqueue.QueueClient, w *consistency.Worker) {
	r.t.Helper()
	drainAll(r.t, q, w)
	r.stop()
	if n := queueLen(r.t, poison); n != 0 {
		r.t.Fatalf("%d messages poisoned", n)
	}
}

// start lets the faults in (on the faulty run); stop shuts them out.
func (r *faultRun) start() { r.gate.on.Store(r.faulty) }
func (r *faultRun) stop()  { r.gate.on.Store(false) }

// do runs one pattern operation the way an application would: an error
// means "not acknowledged", so it runs the operation again (a few times).
// Whether that converges is what the suite tests: an operation that was
// in fact done before its error must not be done twice or refused.
func (r *faultRun) do(what string, op func() error) {
	r.t.Helper()
	r.ops++
	var err error
	for attempt := 0; attempt < 6; attempt++ {
		if err = op(); err == nil {
			return
		}
		r.redone++
		if len(r.errs) < 5 {
			r.errs = append(r.errs, what+": "+err.Error())
		}
	}
	r.t.Fatalf("faulty=%v: %s never succeeded: %v", r.faulty, what, err)
}

// state is a backend-neutral picture of what a scenario left behind.
type state map[string]string

// addTable records every entity of c under label, without the properties
// the service sets (Timestamp, ETag). Properties named in sets hold JSON
// arrays that are sets (index entities' IDs): compared sorted.
func (s state) addTable(t *testing.T, label string, c *aztables.Client, sets ...string) {
	t.Helper()
	pager := c.NewListEntitiesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Entities {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			for k := range m {
				if strings.HasPrefix(k, "odata.") || k == "Timestamp" || k == "Timestamp@odata.type" {
					delete(m, k)
					continue
				}
				if str, ok := m[k].(string); ok && slices.ContainsFunc(sets, func(p string) bool { return strings.HasPrefix(k, p) }) {
					var ids []string
					if json.Unmarshal([]byte(str), &ids) == nil {
						slices.Sort(ids)
						m[k] = ids
					}
				}
			}
			b, _ := json.Marshal(m)
			s[fmt.Sprintf("%s|%v|%v", label, m["PartitionKey"], m["RowKey"])] = string(b)
		}
	}
}

// addBlobs records every blob of container under label: its name, a hash
// of its content and its metadata.
func (s state) addBlobs(t *testing.T, label string, bc *azblob.Client, container string) {
	t.Helper()
	pager := bc.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Include: azblob.ListBlobsInclude{Metadata: true}})
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Segment.BlobItems {
			d, err := bc.DownloadStream(t.Context(), container, *item.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(d.Body)
			d.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(body)
			meta := map[string]string{}
			for k, v := range item.Metadata {
				meta[strings.ToLower(k)] = *v
			}
			b, _ := json.Marshal(meta)
			s[label+"|"+*item.Name] = hex.EncodeToString(sum[:8]) + " " + string(b)
		}
	}
}

// underFaults runs scenario fault-free and then under 10 % faults (before
// the service, lost responses, 500/503) with a fresh set of resources each
// time, and requires the same final state and every operation
// acknowledged.
func underFaults(t *testing.T, env Env, svc func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient, seed uint64, scenario func(r *faultRun) state) {
	t.Helper()
	run := func(faulty bool) (*faultRun, state) {
		inj := faults.New(seed, &faults.Options{Fraction: 0.1})
		gate := &gatedPolicy{p: inj}
		r := &faultRun{t: t, env: env, svc: svc, faulty: faulty, inj: inj, gate: gate, c: &reqcount.Counter{Faults: gate}}
		s := scenario(r)
		r.stop()
		return r, s
	}
	clean, want := run(false)
	r, got := run(true)
	st := r.inj.Stats()
	t.Logf("%s: %d operations, %d requests drawn, faults %d before / %d lost responses / %d statuses; %d operations run again",
		env.Name, r.ops, st.Requests, st.Before, st.After, st.Status, r.redone)
	for _, e := range r.errs {
		t.Logf("  seen: %s", e)
	}
	if st.After == 0 || st.Before+st.Status == 0 {
		t.Fatalf("too few faults to tell anything (%+v): make the scenario longer", st)
	}
	if clean.redone != 0 {
		t.Fatalf("the fault-free run had to run %d operations again: %q", clean.redone, clean.errs)
	}
	// The SDK retries what failed before the service and the 5xx; tablekit
	// settles what a lost response made ambiguous. Nothing should be left
	// for the application to run again.
	if r.redone != 0 {
		t.Errorf("under faults %d operations returned an error first (the first: %q)", r.redone, r.errs)
	}
	if len(want) == 0 {
		t.Fatal("the scenario left nothing to compare")
	}
	if !maps.Equal(want, got) {
		var diff []string
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if got[k] != want[k] {
				diff = append(diff, fmt.Sprintf("%s:\n  want %s\n  got  %s", k, want[k], got[k]))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[k]; !ok {
				diff = append(diff, fmt.Sprintf("%s: not in the fault-free run: %s", k, got[k]))
			}
		}
		if len(diff) > 10 {
			diff = diff[:10]
		}
		t.Fatalf("under faults the final state differs from the fault-free run (%d vs %d items):\n%s", len(got), len(want), strings.Join(diff, "\n"))
	}
}

// oneTable runs work under the faults on a fresh table and returns the
// table's final state under label. The patterns' constructors send no
// request, so work may build them.
func oneTable(r *faultRun, label string, work func(ctx context.Context, client *aztables.Client)) state {
	client := r.table()
	r.start()
	work(r.t.Context(), client)
	r.stop()
	s := state{}
	s.addTable(r.t, label, client)
	return s
}

var surnames = []string{"Jones", "Hall", "Cao", "Smith"}

// idempotent is how an application that retries Adds asks for them.
var idempotent = &table.AddOptions{Idempotent: true}

// RunUnderFaults runs each pattern's scenario fault-free and under 10 %
// faults and compares the final states.
func RunUnderFaults(t *testing.T, env Env, svc func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient) {
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

	t.Run("intra-partition index", func(t *testing.T) {
		underFaults(t, env, svc, 21, func(r *faultRun) state {
			ctx := r.t.Context()
			client := r.table()
			idx, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "idx", Primary: "empid_", Copies: staffIndexes()})
			if err != nil {
				t.Fatal(err)
			}
			r.start()
			for i := 0; i < 24; i++ {
				s := staff(fmt.Sprintf("%06d", 100+i), "F", surnames[i%4], fmt.Sprintf("e%d@contoso.com", i), 20+i)
				r.do("Add", func() error { return idx.Add(ctx, s, idempotent) })
			}
			for i := 0; i < 12; i++ {
				s := staff(fmt.Sprintf("%06d", 100+i), "F", surnames[(i+1)%4], fmt.Sprintf("f%d@contoso.com", i), 20+i)
				r.do("Put", func() error { return idx.Upsert(ctx, s, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) })
			}
			for i := 12; i < 18; i++ {
				r.do("Modify", func() error {
					_, err := idx.Modify(ctx, "Sales", fmt.Sprintf("empid_%06d", 100+i), func(s *Staff) error {
						s.Email = fmt.Sprintf("m%d@contoso.com", i)
						s.Age = 60
						return nil
					}, nil)
					return err
				})
			}
			for i := 20; i < 24; i++ {
				r.do("Delete", func() error {
					return idx.Delete(ctx, "Sales", fmt.Sprintf("empid_%06d", 100+i), &table.DeleteOptions{IfExists: true})
				})
			}
			r.stop()
			rep, err := verifyOf(ctx, idx, &patterns.VerifyOptions{Partition: "Sales"})
			if err != nil || !rep.OK() {
				t.Fatalf("Verify: %+v %v", rep, err)
			}
			s := state{}
			s.addTable(t, "staff", client)
			return s
		})
	})

	t.Run("model lists in the partition", func(t *testing.T) {
		underFaults(t, env, svc, 22, func(r *faultRun) state {
			return oneTable(r, "people", func(ctx context.Context, client *aztables.Client) {
				ix, err := patterns.OpenModel(ctx, tableOf(table.New[Staff](client, nil)), &patterns.ModelOptions[Staff]{Name: "people", Primary: "empid_",
					Lists: []patterns.ListDef[Staff]{{Name: "lname", Prefix: "lname_", Value: func(s *Staff) string { return s.LastName }}}})
				if err != nil {
					t.Fatal(err)
				}
				all := make([]*Staff, 30)
				for i := range all {
					all[i] = staff(fmt.Sprintf("%06d", 200+i), "F", surnames[i%4], fmt.Sprintf("e%d@contoso.com", i), i)
					r.do("Add", func() error { return ix.Add(ctx, all[i], idempotent) })
				}
				for i := 0; i < 10; i++ {
					r.do("Modify", func() error {
						_, err := ix.Modify(ctx, all[i].PartitionKey, all[i].RowKey, func(s *Staff) error { s.LastName = surnames[(i+1)%4]; return nil }, nil)
						return err
					})
				}
				for i := 25; i < 30; i++ {
					r.do("Delete", func() error {
						return ix.Delete(ctx, all[i].PartitionKey, all[i].RowKey, &table.DeleteOptions{IfExists: true})
					})
				}
			})
		})
	})

	t.Run("inter-partition index through the queue", func(t *testing.T) {
		underFaults(t, env, svc, 23, func(r *faultRun) state {
			ctx := r.t.Context()
			primary, copies := r.table(), r.table()
			q, poison := r.queue(), r.queue()
			def := patterns.IndexDef[Emp]{Name: "email", Table: tableOf(table.New[table.Entity](copies, nil)),
				PartitionKey: func(e *Emp) string { return "email_" + e.Department },
				Value:        func(e *Emp) string { return e.Email }}
			idx, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](primary, nil)), &patterns.ModelOptions[Emp]{Name: "idx", Queue: q, CrossCopies: []patterns.IndexDef[Emp]{def}, PublishDelay: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Concurrency: 4}))
			_ = w.Handle(idx.MessageType(), idx.Process)
			depts := []string{"Sales", "Marketing"}
			r.start()
			for i := 0; i < 16; i++ {
				e := emp(depts[i%2], fmt.Sprintf("%06d", 300+i), "F", surnames[i%4], fmt.Sprintf("e%d@contoso.com", i))
				r.do("Put new", func() error { return idx.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) })
			}
			for i := 0; i < 6; i++ {
				e := emp(depts[i%2], fmt.Sprintf("%06d", 300+i), "F", surnames[i%4], fmt.Sprintf("g%d@contoso.com", i))
				r.do("Put change", func() error { return idx.Upsert(ctx, e, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}) })
			}
			for i := 13; i < 16; i++ {
				e := emp(depts[i%2], fmt.Sprintf("%06d", 300+i), "", "", "")
				r.do("Delete", func() error { return idx.Delete(ctx, e.PartitionKey, e.RowKey, &table.DeleteOptions{IfExists: true}) })
			}
			r.drain(q, poison, w)
			rep, err := verifyOf(ctx, idx, nil)
			if err != nil || !rep.OK() {
				t.Fatalf("Verify: %+v %v", rep, err)
			}
			s := state{}
			s.addTable(t, "primary", primary)
			s.addTable(t, "copies", copies)
			return s
		})
	})

	t.Run("model lists across partitions through the queue", func(t *testing.T) {
		underFaults(t, env, svc, 24, func(r *faultRun) state {
			ctx := r.t.Context()
			people, lists := r.table(), r.table()
			q, poison := r.queue(), r.queue()
			ix, err := patterns.OpenModel(ctx, tableOf(table.New[Emp](people, nil)), &patterns.ModelOptions[Emp]{Name: "people", Queue: q, PublishDelay: 2 * time.Second,
				RemoteLists: []patterns.ListDef[Emp]{{Name: "lname", Value: func(e *Emp) string { return e.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lastnames", Prefix: "lname_"}}})
			if err != nil {
				t.Fatal(err)
			}
			w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Concurrency: 4}))
			_ = w.Handle(ix.MessageType(), ix.Process)
			r.start()
			for i := 0; i < 16; i++ {
				e := emp("Sales", fmt.Sprintf("%06d", 400+i), "F", surnames[i%4], "")
				r.do("Upsert", func() error { return ix.Upsert(ctx, e, nil) })
			}
			for i := 0; i < 6; i++ {
				e := emp("Sales", fmt.Sprintf("%06d", 400+i), "F", surnames[(i+2)%4], "")
				r.do("Upsert change", func() error { return ix.Upsert(ctx, e, nil) })
			}
			r.drain(q, poison, w)
			s := state{}
			s.addTable(t, "people", people)
			s.addTable(t, "lists", lists, "IDs")
			return s
		})
	})

	t.Run("entity model: an index in the partition and a list across partitions", func(t *testing.T) {
		underFaults(t, env, svc, 25, func(r *faultRun) state {
			ctx := r.t.Context()
			people, lists := r.table(), r.table()
			q, poison := r.queue(), r.queue()
			tb, _ := table.New[Emp](people, nil)
			m, err := patterns.OpenModel(ctx, tb, &patterns.ModelOptions[Emp]{Name: "emp", Primary: "empid_",
				Copies:       []patterns.IndexDef[Emp]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Emp) string { return e.Email }}},
				RemoteLists:  []patterns.ListDef[Emp]{{Name: "lastname", Value: func(e *Emp) string { return e.LastName }, Table: tableOf(table.New[table.Entity](lists, nil)), Partition: "lastnames", Prefix: "lname_"}},
				Queue:        q,
				PublishDelay: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Concurrency: 4}))
			_ = w.Handle(m.MessageType(), m.Process)
			person := func(i int, email string) *Emp {
				return &Emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", 500+i)}, Department: "Sales", FirstName: "F", LastName: surnames[i%4], Email: email}
			}
			r.start()
			for i := 0; i < 12; i++ {
				e := person(i, fmt.Sprintf("e%d@contoso.com", i))
				r.do("Add", func() error { return m.Add(ctx, e, &table.AddOptions{Idempotent: true}) })
			}
			for i := 0; i < 5; i++ {
				r.do("Modify", func() error {
					_, err := m.Modify(ctx, "Sales", fmt.Sprintf("empid_%06d", 500+i), func(e *Emp) error {
						e.Email, e.LastName = fmt.Sprintf("g%d@contoso.com", i), surnames[(i+1)%4]
						return nil
					}, nil)
					return err
				})
			}
			for i := 9; i < 12; i++ {
				r.do("Delete", func() error {
					return m.Delete(ctx, "Sales", fmt.Sprintf("empid_%06d", 500+i), &table.DeleteOptions{IfExists: true})
				})
			}
			var bulk []*Emp
			for i := 20; i < 60; i++ {
				bulk = append(bulk, person(i, fmt.Sprintf("b%d@contoso.com", i)))
			}
			r.do("Load", func() error {
				sum, err := m.Load(ctx, slices.Values(bulk), &patterns.ModelLoadOptions{Idempotent: true})
				if err == nil && len(sum.Failures) > 0 {
					err = sum.Failures[0].Err
				}
				return err
			})
			r.drain(q, poison, w)
			if rep, err := verifyOf(ctx, m, nil); err != nil || !rep.OK() {
				t.Fatalf("Verify: %+v %v", rep, err)
			}
			s := state{}
			s.addTable(t, "people", people)
			s.addTable(t, "lists", lists, "IDs")
			return s
		})
	})

	// The large entity's scenario is RunLargeEntityUnderFaults
	// (largerace.go): its blob names are new per version, so the two runs'
	// states are compared with the versions normalised.

	t.Run("wide entity", func(t *testing.T) {
		underFaults(t, env, svc, 26, func(r *faultRun) state {
			return oneTable(r, "stats", func(ctx context.Context, client *aztables.Client) {
				w := patterns.NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
				days := func(n, scale int) map[string]any {
					m := map[string]any{}
					for d := 0; d < n; d++ {
						m[fmt.Sprintf("D%03d", d)] = int32(d * scale)
					}
					return m
				}
				for i := 0; i < 24; i++ {
					size := []int{365, 600, 120, 300, 40, 800}[i%6]
					v := &patterns.Wide{PartitionKey: "stats", RowKey: "000123", Properties: days(size, size)}
					r.do("Put", func() error { return w.Put(ctx, v, nil) })
				}
			})
		})
	})

	t.Run("log tail", func(t *testing.T) {
		underFaults(t, env, svc, 27, func(r *faultRun) state {
			return oneTable(r, "claims", func(ctx context.Context, client *aztables.Client) {
				log, err := patterns.NewLogTail[Claim](tableOf(table.New[Claim](client, nil)), &patterns.LogTailOptions{Writer: "w1"})
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 40; i++ {
					at := base.Add(time.Duration(i/2) * time.Minute) // pairs share a tick
					r.do("Append", func() error {
						return log.AppendAt(ctx, "empid_000123", at, &Claim{Amount: float64(i) + 0.25, Note: fmt.Sprint(i)}, nil)
					})
				}
			})
		})
	})

	t.Run("data series", func(t *testing.T) {
		underFaults(t, env, svc, 28, func(r *faultRun) state {
			return oneTable(r, "series", func(ctx context.Context, client *aztables.Client) {
				ds, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](client, nil)), "H", 24)
				if err != nil {
					t.Fatal(err)
				}
				for h := 0; h < 24; h++ {
					r.do("Set", func() error { _, err := ds.Set(ctx, "msgs", "2026-11-21", h, int64(h*h), nil); return err })
				}
				for d := 0; d < 6; d++ {
					vals := map[int]int64{}
					for h := 0; h < 24; h += 3 {
						vals[h] = int64(d*100 + h)
					}
					r.do("SetMany", func() error {
						_, err := ds.SetMany(ctx, "msgs", fmt.Sprintf("2026-11-%02d", 10+d), vals, nil)
						return err
					})
				}
			})
		})
	})

	t.Run("sharded appends", func(t *testing.T) {
		underFaults(t, env, svc, 29, func(r *faultRun) state {
			return oneTable(r, "events", func(ctx context.Context, client *aztables.Client) {
				sh, err := patterns.NewSharded[Event](tableOf(table.New[Event](client, nil)), "events", 8)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 60; i++ {
					e := &Event{Meta: table.Meta{RowKey: keyrules.Uint64(uint64(i))}, Source: fmt.Sprint("src", i%7), N: i}
					r.do("Append", func() error { return sh.Append(ctx, e.Source, e, idempotent) })
				}
			})
		})
	})

	t.Run("table per period", func(t *testing.T) {
		underFaults(t, env, svc, 30, func(r *faultRun) state {
			ctx := r.t.Context()
			sc := r.service()
			now := base.Add(3 * time.Hour)
			prefix := loginTables(t, sc, now)
			rt, err := patterns.NewRollingTables[Claim](sc, prefix, keys.Daily, &patterns.RollingTablesOptions{Retention: 2 * 24 * time.Hour, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			r.start()
			for d := -4; d <= 0; d++ {
				for i := 0; i < 24; i++ {
					at := now.AddDate(0, 0, d).Add(time.Duration(i) * time.Minute)
					c := &Claim{Meta: table.Meta{PartitionKey: "login", RowKey: at.Format(time.RFC3339)}, Note: fmt.Sprint(d)}
					r.do("Add", func() error { return rt.Add(ctx, at, c, idempotent) })
				}
			}
			r.do("Expire", func() error { _, err := rt.Expire(ctx, nil); return err })
			r.stop()
			s := state{}
			lo, hi := keyrules.PrefixRange(prefix)
			f := fmt.Sprintf("TableName ge '%s' and TableName lt '%s'", lo, hi)
			pager := sc.NewListTablesPager(&aztables.ListTablesOptions{Filter: &f})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, tb := range page.Tables {
					s.addTable(t, strings.TrimPrefix(*tb.Name, prefix), sc.NewClient(*tb.Name))
				}
			}
			return s
		})
	})

	t.Run("log data in blobs", func(t *testing.T) {
		underFaults(t, env, svc, 31, func(r *faultRun) state {
			ctx := r.t.Context()
			bc, container := r.container()
			log, err := patterns.NewBlobLog(bc, container, "applog", &patterns.BlobLogOptions{Writer: "web1", MaxBytes: 1 << 20, MaxAge: 24 * time.Hour, Now: func() time.Time { return base }})
			if err != nil {
				t.Fatal(err)
			}
			r.start()
			for round := 0; round < 72; round++ { // an hour a round, flushed at its end
				for i := 0; i < 10; i++ {
					at := base.Add(time.Duration(round*10+i) * 6 * time.Minute)
					r.do("Append", func() error { return log.AppendAt(ctx, at, fmt.Sprintf("GET /orders/%d 200", round*10+i), nil) })
				}
				r.do("Flush", func() error { return log.Flush(ctx, nil) })
			}
			r.stop()
			s := state{}
			s.addBlobs(t, "logs", bc, container)
			return s
		})
	})

	t.Run("denormalized copies and related rows", func(t *testing.T) {
		type Department struct {
			table.Meta
			Name         string
			ManagerName  string
			ManagerEmail string
		}
		type Review struct {
			table.Meta
			EntityType string
			Rating     int
		}
		underFaults(t, env, svc, 33, func(r *faultRun) state {
			ctx := r.t.Context()
			client := r.table()
			d, err := patterns.NewDenormalized[Staff, Department](tableOf(table.New[Staff](client, nil)), tableOf(table.New[Department](client, nil)), []string{"ManagerName", "ManagerEmail"}, func(s *Staff, dep *Department) {
				dep.ManagerName, dep.ManagerEmail = s.FirstName+" "+s.LastName, s.Email
			})
			if err != nil {
				t.Fatal(err)
			}
			deps, _ := table.New[Department](client, nil)
			if err := deps.Add(ctx, &Department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "dept"}, Name: "Sales"}, nil); err != nil {
				t.Fatal(err)
			}
			reg := table.NewRegistry(nil)
			_ = table.Register[Staff](reg, "Employee")
			_ = table.Register[Review](reg, "Review")
			r.start()
			for i := 0; i < 40; i++ {
				mgr := staff("000123", "Don", surnames[i%4], fmt.Sprintf("don%d@contoso.com", i), 34)
				r.do("Denormalized.Update", func() error { return d.Update(ctx, mgr, []string{"dept"}, nil) })
			}
			for i := 0; i < 40; i++ {
				id := fmt.Sprintf("%06d", 700+i)
				parent := &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: id}, FirstName: "F", LastName: surnames[i%4]}
				related := []batch.Op{batch.Upsert(parent, aztables.UpdateModeReplace)}
				for _, year := range []string{"2010", "2011", "2012"} {
					related = append(related, batch.Upsert(&Review{Meta: table.Meta{PartitionKey: "Sales", RowKey: id + "_" + year}, EntityType: "Review", Rating: i % 5}, aztables.UpdateModeReplace))
				}
				r.do("related rows' transaction", func() error { _, err := batch.Submit(ctx, client, related, nil); return err })
			}
			r.stop()
			s := state{}
			s.addTable(t, "sales", client)
			return s
		})
	})

	t.Run("archive mover", func(t *testing.T) {
		underFaults(t, env, svc, 32, func(r *faultRun) state {
			ctx := r.t.Context()
			current, archive := r.table(), r.table()
			q, poison := r.queue(), r.queue()
			from, _ := table.New[Staff](current, nil)
			to, _ := table.New[Staff](archive, nil)
			for i := 0; i < 30; i++ { // the data exists before the faults begin
				if err := from.Add(ctx, staff(fmt.Sprintf("%06d", 600+i), "F", surnames[i%4], "", i), nil); err != nil {
					t.Fatal(err)
				}
			}
			mover := consistency.NewMover[Staff](from, to, consistency.NewSender(q, nil), nil)
			w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Concurrency: 4}))
			_ = w.Handle(mover.MessageType(), mover.Process)
			r.start()
			for i := 0; i < 30; i += 2 {
				r.do("Request", func() error { return mover.Request(ctx, "Sales", fmt.Sprintf("empid_%06d", 600+i), nil) })
			}
			r.drain(q, poison, w)
			s := state{}
			s.addTable(t, "current", current)
			s.addTable(t, "archive", archive)
			return s
		})
	})
}
