package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Side is one way of doing a scenario's work: the naive way or tablekit's.
type Side struct {
	Name string
	// Round prepares one round, untimed (tables, data, queues), and returns
	// the timed work, which reports how many entities (or messages) it
	// handled, and a cleanup.
	Round func(ctx context.Context) (work func(context.Context) (int, error), cleanup func(), err error)
}

// Round is what one round of one side measured.
type Round struct {
	N    int           // entities or messages handled
	Wall time.Duration // the work's wall time
	CPU  time.Duration // this process's user+system CPU during the work
	// ServiceCPU is the service's user+system CPU during the work, when
	// it runs on this machine (Azurite): 0 otherwise.
	ServiceCPU time.Duration
	// ServiceMainCPU is the part of ServiceCPU spent on the service's
	// main thread: the one that runs an emulator's JavaScript.
	ServiceMainCPU time.Duration
	Requests       int     // storage requests sent
	Slow           int     // requests that took longer than SlowRequest
	Busy           float64 // the machine's CPUs busy, 0..1, during the work
}

// SlowRequest is the time past which a request is flagged: Azurite pauses
// whole seconds while it collects dead queue messages, and such a stall
// must not pass as a result.
const SlowRequest = time.Second

// Saturated is the share of the machine's CPU time above which a row says
// the CPUs were saturated (so the ratio measures CPU, not the service).
const Saturated = 0.9

// Stat is the minimum, median and maximum of a measurement over rounds.
type Stat struct{ Min, Median, Max float64 }

func statOf(xs []float64) Stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return Stat{}
	}
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{s[0], m, s[len(s)-1]}
}

// String renders "median (min–max)" with the given precision.
func (s Stat) Format(prec int) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

// Sample is one side's rounds.
type Sample struct {
	Name   string
	Rounds []Round
}

func (s Sample) each(f func(Round) float64) Stat {
	xs := make([]float64, len(s.Rounds))
	for i, r := range s.Rounds {
		xs[i] = f(r)
	}
	return statOf(xs)
}

// PerSecond is the throughput, in entities (or messages) a second.
func (s Sample) PerSecond() Stat {
	return s.each(func(r Round) float64 { return float64(r.N) / r.Wall.Seconds() })
}

// CPUPerEntity is this process's CPU per entity, in microseconds.
func (s Sample) CPUPerEntity() Stat {
	return s.each(func(r Round) float64 { return float64(r.CPU.Microseconds()) / float64(r.N) })
}

// ServiceCPUPerEntity is the service's CPU (µs) per entity, when it runs
// on this machine; 0 otherwise.
func (s Sample) ServiceCPUPerEntity() Stat {
	return s.each(func(r Round) float64 { return float64(r.ServiceCPU.Microseconds()) / float64(r.N) })
}

// ServiceMainThread is the share of one core the service's main thread
// used during the work (0..1): near 1, the emulator's one JavaScript
// thread was what held the throughput.
func (s Sample) ServiceMainThread() Stat {
	return s.each(func(r Round) float64 { return r.ServiceMainCPU.Seconds() / r.Wall.Seconds() })
}

// Bound is the most entities a second the round's work could reach on
// this machine with its CPU costs as measured: the service's main thread
// can give at most one core (a Node.js emulator runs its JavaScript on
// that one thread), and client and service together at most the
// machine's CPUs. The lower of the two binds; a side that reaches its
// bound is held by CPU, not by waiting.
func (r Round) Bound(cpus int) float64 {
	n := float64(r.N)
	b := float64(cpus) / ((r.CPU + r.ServiceCPU).Seconds() / n)
	if m := r.ServiceMainCPU.Seconds() / n; m > 0 {
		b = min(b, 1/m)
	}
	return b
}

// BoundRatio is B's Bound over A's, round by round: the speed-up B's
// lower CPU costs allow. The measured Ratio over it is how much of that
// speed-up B reached.
func (c Comparison) BoundRatio(cpus int) Stat {
	xs := make([]float64, len(c.A.Rounds))
	for i := range xs {
		xs[i] = c.B.Rounds[i].Bound(cpus) / c.A.Rounds[i].Bound(cpus)
	}
	return statOf(xs)
}

// OfBound is, round by round, the measured Ratio over BoundRatio.
func (c Comparison) OfBound(cpus int) Stat {
	xs := make([]float64, len(c.A.Rounds))
	for i := range xs {
		a, b := c.A.Rounds[i], c.B.Rounds[i]
		measured := (float64(b.N) / b.Wall.Seconds()) / (float64(a.N) / a.Wall.Seconds())
		xs[i] = measured / (b.Bound(cpus) / a.Bound(cpus))
	}
	return statOf(xs)
}

// RequestsPerEntity is the storage requests per entity.
func (s Sample) RequestsPerEntity() Stat {
	return s.each(func(r Round) float64 { return float64(r.Requests) / float64(r.N) })
}

// Busy is the machine's CPU use during the rounds.
func (s Sample) Busy() Stat { return s.each(func(r Round) float64 { return r.Busy }) }

// Slow is how many requests of all rounds were slower than SlowRequest.
func (s Sample) Slow() int {
	n := 0
	for _, r := range s.Rounds {
		n += r.Slow
	}
	return n
}

// Comparison is A and B measured in the same rounds.
type Comparison struct {
	A, B Sample
	// Rerun lists the rounds measured again after a transport failure
	// (Azurite resets a connection now and then under load), with the
	// failure: a row reports them rather than stopping or hiding them.
	Rerun []string
}

// maxReruns bounds how often one round is measured again after a
// transport failure before the comparison gives up.
const maxReruns = 2

// Ratio is B's throughput over A's, round by round (each round's A and B
// ran next to each other, so slow drifts of the machine hit both).
func (c Comparison) Ratio() Stat {
	xs := make([]float64, len(c.A.Rounds))
	for i := range xs {
		a, b := c.A.Rounds[i], c.B.Rounds[i]
		xs[i] = (float64(b.N) / b.Wall.Seconds()) / (float64(a.N) / a.Wall.Seconds())
	}
	return statOf(xs)
}

// CPURatio is B's CPU per entity over A's, round by round.
func (c Comparison) CPURatio() Stat {
	xs := make([]float64, len(c.A.Rounds))
	for i := range xs {
		a, b := c.A.Rounds[i], c.B.Rounds[i]
		xs[i] = (b.CPU.Seconds() / float64(b.N)) / (a.CPU.Seconds() / float64(a.N))
	}
	return statOf(xs)
}

// Saturated reports whether the machine's CPUs were saturated in most
// rounds of either side.
func (c Comparison) Saturated() bool {
	return c.A.Busy().Median >= Saturated || c.B.Busy().Median >= Saturated
}

// isTransport reports a failure of the connection itself (no answer, or
// an answer cut off), which says nothing about the side being measured.
func isTransport(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Compare runs a and b for rounds rounds each, interleaved A B, B A, A B, …
// in this one process, so that neither always runs first or last.
func (acct *Account) Compare(ctx context.Context, rounds int, a, b Side) (Comparison, error) {
	c := Comparison{A: Sample{Name: a.Name}, B: Sample{Name: b.Name}}
	for i := range rounds {
		order := []*Side{&a, &b}
		if i%2 == 1 {
			order = []*Side{&b, &a}
		}
		for _, s := range order {
			r, err := acct.measure(ctx, *s)
			for try := 0; err != nil && isTransport(err) && try < maxReruns && ctx.Err() == nil; try++ {
				c.Rerun = append(c.Rerun, fmt.Sprintf("%s, round %d: %v", s.Name, i+1, err))
				r, err = acct.measure(ctx, *s)
			}
			if err != nil {
				return c, fmt.Errorf("%s, round %d: %w", s.Name, i+1, err)
			}
			if s == &a {
				c.A.Rounds = append(c.A.Rounds, r)
			} else {
				c.B.Rounds = append(c.B.Rounds, r)
			}
		}
	}
	return c, nil
}

func (acct *Account) measure(ctx context.Context, s Side) (Round, error) {
	work, cleanup, err := s.Round(ctx)
	if err != nil {
		return Round{}, err
	}
	defer cleanup()
	acct.Ledger.Reset()
	acct.slow.Store(0)
	if acct.servicePID == 0 {
		acct.servicePID = servicePID(acct.Conn)
	}
	cpu0, busy0, svc0, main0 := processCPU(), machineCPU(), processCPUOf(acct.servicePID), mainThreadCPUOf(acct.servicePID)
	start := time.Now()
	n, err := work(ctx)
	wall := time.Since(start)
	cpu1, busy1, svc1, main1 := processCPU(), machineCPU(), processCPUOf(acct.servicePID), mainThreadCPUOf(acct.servicePID)
	if err != nil {
		return Round{}, err
	}
	if n <= 0 {
		return Round{}, fmt.Errorf("the work handled nothing")
	}
	return Round{N: n, Wall: wall, CPU: cpu1 - cpu0, ServiceCPU: svc1 - svc0, ServiceMainCPU: main1 - main0, Requests: acct.Ledger.Total(), Slow: int(acct.slow.Load()), Busy: busy1.since(busy0)}, nil
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTimes are the machine's cumulative CPU times from /proc/stat.
type cpuTimes struct{ busy, total float64 }

func machineCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var t cpuTimes
	for i, v := range f[1:] {
		x, _ := strconv.ParseFloat(v, 64)
		if i < 8 { // guest times are already counted in user
			t.total += x
			if i != 3 && i != 4 { // idle, iowait
				t.busy += x
			}
		}
	}
	return t
}

// since is the share of CPU time busy between t0 and t; 0 when unknown.
func (t cpuTimes) since(t0 cpuTimes) float64 {
	if t.total <= t0.total {
		return 0
	}
	return (t.busy - t0.busy) / (t.total - t0.total)
}
