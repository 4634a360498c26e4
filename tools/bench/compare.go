package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/benchkit"
)

// comparison is one row: the naive way (A) against tablekit (B), at the
// same concurrency unless the row says it splits a ratio into its parts.
type comparison struct {
	name string
	a, b benchkit.Side
	goal func(benchkit.Comparison) (string, bool)
}

func atLeast(x float64) func(benchkit.Comparison) (string, bool) {
	return func(c benchkit.Comparison) (string, bool) {
		return fmt.Sprintf("median >= %.2fx", x), c.Ratio().Median >= x
	}
}

func cpuAtMost(x float64) func(benchkit.Comparison) (string, bool) {
	return func(c benchkit.Comparison) (string, bool) {
		return fmt.Sprintf("CPU/ent median <= %.2fx", x), c.CPURatio().Median <= x
	}
}

// queueGoal is the goal for a queue-driven handler: at most 1.25
// requests a message, and msgs/s at least 0.9 of the bound its CPU costs
// set (Comparison.OfBound: Azurite's main thread at most one core, client
// and Azurite at most the machine's CPUs).
func queueGoal(c benchkit.Comparison) (string, bool) {
	return "req/msg <= 1.25, >= 0.9 of bound", c.B.RequestsPerEntity().Max <= 1.25 && c.OfBound(runtime.NumCPU()).Median >= 0.9
}

// queueWorkerGoal is the goal of the Worker with batched handlers against
// the hand loop doing the same work: at most 1.25 requests a message, and
// msgs/s at least 0.9 of the hand loop's.
func queueWorkerGoal(c benchkit.Comparison) (string, bool) {
	return "req/msg <= 1.25, B/A >= 0.9", c.B.RequestsPerEntity().Max <= 1.25 && c.Ratio().Median >= 0.9
}

// compareAll runs every A/B comparison, rounds rounds each, A and B
// interleaved in this process, and prints one table.
func compareAll(ctx context.Context, acct *benchkit.Account, n, rounds int, only string) error {
	perEntity := min(n, 2000) // one request per entity: keep rounds short
	rows := []comparison{
		{"bulk, batching alone: one at a time both", acct.PerEntity(perEntity, 20, 1, benchkit.EncodeEDM), acct.Writer(perEntity, 20, 1), atLeast(6)},
		{"bulk, parallelism alone: Writer 1 vs 8", acct.Writer(n, 20, 1), acct.Writer(n, 20, 8), nil},
		{"bulk at concurrency 1 vs SDK-documented hand loop", acct.HandTransactions(n, 20, 1, benchkit.EncodeEDM), acct.Writer(n, 20, 1), cpuAtMost(0.25)},
		{"bulk at concurrency 8 vs SDK-documented hand loop", acct.HandTransactions(n, 20, 8, benchkit.EncodeEDM), acct.Writer(n, 20, 8), cpuAtMost(0.25)},
		{"bulk at concurrency 8 vs struct+json hand loop", acct.HandTransactions(n, 20, 8, benchkit.EncodeStruct), acct.Writer(n, 20, 8), cpuAtMost(0.25)},
		{"bulk at concurrency 8, fallback: client without tablekit's policy", acct.HandTransactions(n, 20, 8, benchkit.EncodeStruct), acct.WriterFallback(n, 20, 8), nil},
		{"point Get, one at a time", acct.GetRaw(1000, benchkit.PointRow), acct.GetTablekit(1000, benchkit.PointRow, false), cpuAtMost(0.7)},
		{"point Get, the floor: GetEntity with the body dropped undecoded", acct.GetRaw(1000, benchkit.PointRow), acct.GetFloor(1000, benchkit.PointRow), nil},
		{"point Get, the transport alone: the naive read on tablekit's transport", acct.GetRaw(1000, benchkit.PointRow), acct.GetRawOnKitTransport(1000, benchkit.PointRow), nil},
		{"point Get, fallback: client without tablekit's policy", acct.GetRaw(1000, benchkit.PointRow), acct.GetTablekit(1000, benchkit.PointRow, true), nil},
		// The same of wider entities: how much of a read is decoding
		// depends on the entity.
		{"point Get of a 15-property employee, one at a time", acct.GetRaw(1000, benchkit.PointEmployee), acct.GetTablekit(1000, benchkit.PointEmployee, false), cpuAtMost(0.7)},
		{"point Get of a 15-property employee, the floor", acct.GetRaw(1000, benchkit.PointEmployee), acct.GetFloor(1000, benchkit.PointEmployee), nil},
		{"point Get of a 15-property employee, the transport alone: the naive read on tablekit's transport", acct.GetRaw(1000, benchkit.PointEmployee), acct.GetRawOnKitTransport(1000, benchkit.PointEmployee), nil},
		{"point Get of a 40-property customer, one at a time", acct.GetRaw(1000, benchkit.PointCustomer), acct.GetTablekit(1000, benchkit.PointCustomer, false), cpuAtMost(0.7)},
		{"point Get of a 40-property customer, the floor", acct.GetRaw(1000, benchkit.PointCustomer), acct.GetFloor(1000, benchkit.PointCustomer), nil},
		{"point Get of a 40-property customer, the transport alone: the naive read on tablekit's transport", acct.GetRaw(1000, benchkit.PointCustomer), acct.GetRawOnKitTransport(1000, benchkit.PointCustomer), nil},
		{"query one partition of 5,000", acct.QueryRaw(5000), acct.QueryTablekit(5000, false), cpuAtMost(0.25)},
		{"query one partition of 5,000, fallback: client without tablekit's policy", acct.QueryRaw(5000), acct.QueryTablekit(5000, true), nil},
		{"archive 300 through the queue, concurrency 1: Mover on a Worker", acct.ArchiveHand(300, 1), acct.ArchiveMover(300, 1), nil},
		{"archive 300 through the queue, concurrency 1: Mover.ProcessBatch on a Worker", acct.ArchiveHand(300, 1), acct.ArchiveBatches(300, 1), atLeast(1.8)},
		{"archive 500 through the queue, concurrency 8: Mover on a Worker", acct.ArchiveHand(500, 8), acct.ArchiveMover(500, 8), nil},
		{"archive 500 through the queue, concurrency 8: Mover.ProcessBatch on a Worker", acct.ArchiveHand(500, 8), acct.ArchiveBatches(500, 8), atLeast(1.8)},
		{"model (email copy, last-name lists), 320 new entities, concurrency 8: Model.ProcessBatch on a Worker", acct.ModelWorker(320, 8), acct.ModelBatches(320, 8), queueGoal},
		// 320 are ten dequeues of 32 over eight handlers, so their start
		// and their last, partial wave weigh on msgs/s; 1,280 are forty.
		{"model (email copy, last-name lists), 1,280 new entities, concurrency 8: Model.ProcessBatch on a Worker", acct.ModelWorker(1280, 8), acct.ModelBatches(1280, 8), queueGoal},
		// One queue carrying the model's and the mover's messages: the
		// Worker with both batched handlers against a hand loop (dequeue
		// 32, apply each type's batch, delete) at equal concurrency.
		{"model and mover batched on one queue, 640 messages, concurrency 8: hand loop → Worker", acct.MixedHand(320, 8), acct.MixedWorker(320, 8), queueWorkerGoal},
	}
	fmt.Printf("A/B comparisons: %d rounds each, A and B interleaved (A B, B A, …); throughput and ratio as median (min–max);\n", rounds)
	fmt.Printf("CPU is this process's user+system time per entity (getrusage); busy is the whole machine's CPU use during the rounds.\n\n")
	header := fmt.Sprintf("%-50s | %-50s | %-26s | %-22s | %-24s | %-9s | %-22s | %s", "comparison (A → B)", "sides", "throughput /s", "B/A throughput", "CPU µs/entity A → B", "req/ent", "goal", "met")
	fmt.Println(header)
	fmt.Println(strings.Repeat("-", len(header)+10))
	for _, r := range rows {
		if only != "" && !slices.ContainsFunc(strings.Split(only, "|"), func(o string) bool { return strings.Contains(r.name, o) }) {
			continue
		}
		c, err := acct.Compare(ctx, rounds, r.a, r.b)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		goal, met := "informative", true
		if r.goal != nil {
			goal, met = r.goal(c)
		}
		metText := "yes"
		if !met {
			metText = "NO"
		}
		notes := []string{}
		if c.Saturated() {
			notes = append(notes, fmt.Sprintf("CPUs saturated (busy %.0f%% / %.0f%%)", 100*c.A.Busy().Median, 100*c.B.Busy().Median))
		} else {
			notes = append(notes, fmt.Sprintf("busy %.0f%% / %.0f%%", 100*c.A.Busy().Median, 100*c.B.Busy().Median))
		}
		if sa, sb := c.A.ServiceCPUPerEntity(), c.B.ServiceCPUPerEntity(); sa.Median > 0 && sb.Median > 0 {
			notes = append(notes, fmt.Sprintf("service (Azurite) CPU µs/entity %s → %s (%.2fx)", sa.Format(0), sb.Format(0), sb.Median/sa.Median))
			cpus := runtime.NumCPU()
			notes = append(notes, fmt.Sprintf("Azurite's main thread %.0f%% / %.0f%% of a core; bound (main thread ≤ 1 core, all ≤ %d CPUs) %s, reached %s",
				100*c.A.ServiceMainThread().Median, 100*c.B.ServiceMainThread().Median, cpus, c.BoundRatio(cpus).Format(2)+"x", c.OfBound(cpus).Format(2)))
		}
		if len(c.Rerun) > 0 {
			notes = append(notes, fmt.Sprintf("%d rounds measured again after a transport failure (%s)", len(c.Rerun), strings.Join(c.Rerun, "; ")))
		}
		if slow := c.A.Slow() + c.B.Slow(); slow > 0 {
			notes = append(notes, fmt.Sprintf("%d requests over %v: a stall, rerun", slow, benchkit.SlowRequest))
			metText = "STALL"
		}
		fmt.Printf("%-50s | A %-48s | %-26s | %-22s | %-24s | %-9s | %-22s | %s\n",
			r.name, c.A.Name, c.A.PerSecond().Format(0), "", c.A.CPUPerEntity().Format(1), fmt.Sprintf("%.3f", c.A.RequestsPerEntity().Median), "", "")
		fmt.Printf("%-50s | B %-48s | %-26s | %-22s | %-24s | %-9s | %-22s | %s\n",
			"", c.B.Name, c.B.PerSecond().Format(0), c.Ratio().Format(2)+"x", c.B.CPUPerEntity().Format(1)+" ("+c.CPURatio().Format(2)+"x)", fmt.Sprintf("%.3f", c.B.RequestsPerEntity().Median), goal, metText)
		fmt.Printf("%-50s |   %s\n", "", strings.Join(notes, "; "))
	}
	fmt.Println()
	return nil
}
