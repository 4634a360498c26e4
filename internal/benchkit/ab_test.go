package benchkit

import (
	"math"
	"os"
	"strconv"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestBoundTakesTheLowerOfTheTwoLimits: a round is held either by the
// service's one JavaScript thread or by all the machine's CPUs, whichever
// gives fewer entities a second.
func TestBoundTakesTheLowerOfTheTwoLimits(t *testing.T) {
	// 100 entities: main thread 1 s (100/s at one core), all CPU 2 s (100/s
	// on 2 CPUs, 200/s on 4).
	r := Round{N: 100, CPU: 500 * time.Millisecond, ServiceCPU: 1500 * time.Millisecond, ServiceMainCPU: time.Second}
	if got := r.Bound(4); !near(got, 100) {
		t.Errorf("4 CPUs: bound %v, want 100 (the main thread binds)", got)
	}
	if got := r.Bound(1); !near(got, 50) {
		t.Errorf("1 CPU: bound %v, want 50 (the CPUs bind)", got)
	}
	// Without a main-thread figure (a service not on this machine) only
	// the CPUs bind.
	r.ServiceMainCPU = 0
	if got := r.Bound(4); !near(got, 200) {
		t.Errorf("no main-thread figure: bound %v, want 200", got)
	}
}

// TestOfBoundIsTheMeasuredRatioOverTheBoundRatio, round by round.
func TestOfBoundIsTheMeasuredRatioOverTheBoundRatio(t *testing.T) {
	a := Round{N: 100, Wall: 2 * time.Second, CPU: 200 * time.Millisecond, ServiceCPU: time.Second, ServiceMainCPU: time.Second}                              // 50/s, bound 100/s
	b := Round{N: 100, Wall: 500 * time.Millisecond, CPU: 100 * time.Millisecond, ServiceCPU: 250 * time.Millisecond, ServiceMainCPU: 250 * time.Millisecond} // 200/s, bound 400/s
	c := Comparison{A: Sample{Rounds: []Round{a}}, B: Sample{Rounds: []Round{b}}}
	if got := c.BoundRatio(8).Median; !near(got, 4) {
		t.Errorf("bound ratio %v, want 4", got)
	}
	if got := c.Ratio().Median; !near(got, 4) {
		t.Errorf("ratio %v, want 4", got)
	}
	if got := c.OfBound(8).Median; !near(got, 1) {
		t.Errorf("of bound %v, want 1", got)
	}
	c.B.Rounds[0].Wall = time.Second // 100/s: half the speed-up the bound allows
	if got := c.OfBound(8).Median; !near(got, 0.5) {
		t.Errorf("of bound %v, want 0.5", got)
	}
	if got := c.A.ServiceMainThread().Median; !near(got, 0.5) {
		t.Errorf("A's main thread %v of a core, want 0.5", got)
	}
}

// TestMainThreadCPUIsPartOfTheProcesss reads this test process's own
// /proc files: its main thread's CPU is some, not more than, the whole.
func TestMainThreadCPUIsPartOfTheProcesss(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc on this system")
	}
	pid := os.Getpid()
	deadline := time.Now().Add(200 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = strconv.Itoa(x)
	}
	main, all := mainThreadCPUOf(pid), processCPUOf(pid)
	if all <= 0 {
		t.Fatalf("process CPU %v after 200 ms of work", all)
	}
	if main < 0 || main > all {
		t.Errorf("main thread %v, process %v: the part exceeds the whole", main, all)
	}
	if mainThreadCPUOf(0) != 0 || processCPUOf(0) != 0 {
		t.Error("pid 0 (no service found) must read as no CPU")
	}
}
