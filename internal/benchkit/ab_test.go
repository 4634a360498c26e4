package benchkit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tablekit/tablekit/ledger"
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

// TestCompareMeasuresARoundAgainAfterATransportFailure: a connection
// reset says nothing about the side, so its round is measured again and
// listed; any other failure, or a reset that keeps coming, stops the row.
func TestCompareMeasuresARoundAgainAfterATransportFailure(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	side := func(name string, fails ...error) (Side, *int) {
		calls := new(int)
		return Side{Name: name, Round: func(context.Context) (func(context.Context) (int, error), func(), error) {
			return func(context.Context) (int, error) {
				*calls++
				if *calls <= len(fails) {
					return 0, fails[*calls-1]
				}
				return 1, nil
			}, func() {}, nil
		}}, calls
	}
	acct := &Account{Ledger: ledger.New()}

	a, aCalls := side("a", fmt.Errorf("body download policy: %w", reset))
	b, _ := side("b")
	c, err := acct.Compare(t.Context(), 2, a, b)
	if err != nil || len(c.A.Rounds) != 2 || len(c.B.Rounds) != 2 || len(c.Rerun) != 1 || *aCalls != 3 {
		t.Fatalf("one reset: %v, %d/%d rounds, reruns %q, %d calls of a; want nil, 2/2, one rerun, 3", err, len(c.A.Rounds), len(c.B.Rounds), c.Rerun, *aCalls)
	}

	wrong := errors.New("wrote 9 of 10")
	a, _ = side("a", wrong)
	if _, err := acct.Compare(t.Context(), 2, a, b); !errors.Is(err, wrong) {
		t.Fatalf("a failure of the side: %v, want it reported", err)
	}

	a, aCalls = side("a", reset, reset, reset)
	if c, err := acct.Compare(t.Context(), 2, a, b); !errors.Is(err, syscall.ECONNRESET) || *aCalls != 1+maxReruns || len(c.Rerun) != maxReruns {
		t.Fatalf("resets that keep coming: %v after %d calls; want the reset after %d", err, *aCalls, 1+maxReruns)
	}
}
