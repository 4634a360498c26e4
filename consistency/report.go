package consistency

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tablekit/tablekit/internal/redact"
)

// TypeFailures counts the failures of one message type.
type TypeFailures struct {
	// Retried counts failed deliveries left to reappear after their back-off.
	Retried int64
	// Poisoned counts messages moved to the poison queue.
	Poisoned int64
	// Panicked counts deliveries whose handler panicked (also in Retried or
	// Poisoned).
	Panicked int64
	// LastError is the newest failure's error.
	LastError error
}

// FailureReport is the error Drain and Run return when messages failed
// while they ran: counts per message type and each type's last error.
// Messages of malformed text are under the type "". errors.Is and
// errors.As see the last errors (a *PanicError, the service's
// *azcore.ResponseError, a handler's own error).
type FailureReport struct {
	// Retried, Poisoned and Panicked are the totals over all types.
	Retried, Poisoned, Panicked int64
	// ByType holds the counts and last error of each type that failed.
	ByType map[string]TypeFailures
}

// Error summarises the report: totals, then each type with its last error.
func (r *FailureReport) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "consistency: messages failed: %d retried, %d poisoned, %d panics", r.Retried, r.Poisoned, r.Panicked)
	for _, t := range slices.Sorted(maps.Keys(r.ByType)) {
		f := r.ByType[t]
		fmt.Fprintf(&b, "; %s: %d retried, %d poisoned", typeName(t), f.Retried, f.Poisoned)
		if f.LastError != nil {
			fmt.Fprintf(&b, ", last error: %s", redact.Line(f.LastError))
		}
	}
	return b.String()
}

// Unwrap returns each type's last error, in type order.
func (r *FailureReport) Unwrap() []error {
	var out []error
	for _, t := range slices.Sorted(maps.Keys(r.ByType)) {
		if e := r.ByType[t].LastError; e != nil {
			out = append(out, e)
		}
	}
	return out
}

func typeName(t string) string {
	if t == "" {
		return "(malformed)"
	}
	return t
}

// failure kinds recorded by a tally.
const (
	failRetried = iota
	failPoisoned
)

// tally collects the failures of one Drain or Run.
type tally struct {
	mu sync.Mutex
	r  FailureReport
}

func (t *tally) add(kind int, msgType string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	addFailure(&t.r.Retried, &t.r.Poisoned, &t.r.Panicked, &t.r.ByType, kind, msgType, err)
}

// report returns the collected failures, or nil when nothing failed.
func (t *tally) report() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.r.Retried == 0 && t.r.Poisoned == 0 {
		return nil
	}
	r := t.r
	r.ByType = copyFailures(t.r.ByType)
	return &r
}

func addFailure(retried, poisoned, panicked *int64, by *map[string]TypeFailures, kind int, msgType string, err error) {
	if *by == nil {
		*by = map[string]TypeFailures{}
	}
	f := (*by)[msgType]
	switch kind {
	case failRetried:
		*retried++
		f.Retried++
	case failPoisoned:
		*poisoned++
		f.Poisoned++
	}
	if pe := (*PanicError)(nil); errors.As(err, &pe) {
		*panicked++
		f.Panicked++
	}
	f.LastError = err
	(*by)[msgType] = f
}

func copyFailures(m map[string]TypeFailures) map[string]TypeFailures {
	return maps.Clone(m)
}
