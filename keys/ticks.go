package keys

import (
	"sync"
	"time"
)

// .NET's DateTime counts 100 ns ticks from 0001-01-01T00:00:00Z.
const (
	// MaxTicks is DateTime.MaxValue.Ticks (9999-12-31T23:59:59.9999999).
	MaxTicks int64 = 3155378975999999999
	// TicksWidth is the width of "{0:D19}", the guide's format for ticks.
	TicksWidth = 19
	// unixEpochTicks is the tick count of 1970-01-01T00:00:00Z.
	unixEpochTicks int64 = 621355968000000000
)

// MinTime and MaxTime bound what .NET's DateTime can hold.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// TicksOf is t in .NET ticks, truncated to 100 ns. It is clamped to
// [0, MaxTicks]; use CheckTicksRange to refuse out-of-range instants instead.
func TicksOf(t time.Time) int64 {
	if t.Before(MinTime) {
		return 0
	}
	if t.After(MaxTime) {
		return MaxTicks
	}
	// Split into seconds and nanoseconds so instants far from 1970 do not
	// overflow time.Duration.
	return (t.Unix()*10_000_000 + unixEpochTicks) + int64(t.Nanosecond()/100)
}

// TimeOfTicks is the UTC instant of a .NET tick count in [0, MaxTicks].
func TimeOfTicks(ticks int64) time.Time {
	d := ticks - unixEpochTicks
	sec, rem := d/10_000_000, d%10_000_000
	if rem < 0 {
		sec--
		rem += 10_000_000
	}
	return time.Unix(sec, rem*100).UTC()
}

// CheckTicksRange reports an error when .NET cannot represent t.
func CheckTicksRange(t time.Time) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return invalid("key", t.UTC().Format(time.RFC3339Nano), ErrOutOfRange, "DateTime holds 0001-01-01 to 9999-12-31T23:59:59.9999999Z")
	}
	return nil
}

func formatTicks(ticks int64) string { return padUint(uint64(ticks), TicksWidth) }

// Ticks formats t as .NET's string.Format("{0:D19}", t.ToUniversalTime().Ticks):
// ascending, oldest first. Out-of-range instants are clamped (see TicksOf).
func Ticks(t time.Time) string { return formatTicks(TicksOf(t)) }

// InvertedTicks formats t as .NET's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.ToUniversalTime().Ticks),
// the guide's log-tail RowKey: newest first. Go and .NET writers produce the
// same keys. Out-of-range instants are clamped (see TicksOf).
func InvertedTicks(t time.Time) string { return formatTicks(MaxTicks - TicksOf(t)) }

func parseTicks(s string) (int64, error) {
	if len(s) != TicksWidth {
		return 0, invalid("key", s, ErrBadSyntax, "ticks are exactly 19 digits")
	}
	u, err := parseDigits("ticks", s, TicksWidth)
	if err != nil {
		return 0, err
	}
	if u > uint64(MaxTicks) {
		return 0, invalid("key", s, ErrOutOfRange, "ticks are at most DateTime.MaxValue.Ticks")
	}
	return int64(u), nil
}

// ParseTicks inverts Ticks.
func ParseTicks(s string) (time.Time, error) {
	n, err := parseTicks(s)
	if err != nil {
		return time.Time{}, err
	}
	return TimeOfTicks(n), nil
}

// ParseInvertedTicks inverts InvertedTicks; only the first 19 characters are
// read when s carries a suffix from LogKeys.
func ParseInvertedTicks(s string) (time.Time, error) {
	if len(s) > TicksWidth && s[TicksWidth] == '_' {
		s = s[:TicksWidth]
	}
	n, err := parseTicks(s)
	if err != nil {
		return time.Time{}, err
	}
	return TimeOfTicks(MaxTicks - n), nil
}

// seqWidth digits of descending sequence follow a tick; 10^5 keys per 100 ns
// per writer is far beyond what one process issues.
const seqWidth = 5

// LogKeys issues log-tail RowKeys: the inverted ticks of an instant, then
// "_", an optional writer id, and a descending sequence number, so that keys
// issued in the same tick stay unique and still sort newest first. Keys from
// one LogKeys never repeat and always sort in the reverse of issue order,
// even if the clock steps back (the tick is then held until the clock passes
// it). Writers in other processes need distinct Writer ids. Safe for
// concurrent use.
type LogKeys struct {
	// Writer distinguishes concurrent writers; it must be valid in a key and
	// must not contain "_". Default: empty.
	Writer string

	mu   sync.Mutex
	last int64
	seq  uint32
}

// Next returns the key for an entry written at t.
func (k *LogKeys) Next(t time.Time) (string, error) {
	if err := CheckTicksRange(t); err != nil {
		return "", err
	}
	if err := checkKeyChars("key component", k.Writer); err != nil {
		return "", err
	}
	tick := TicksOf(t)
	k.mu.Lock()
	if tick <= k.last {
		tick = k.last
		k.seq++
		if k.seq >= 100000 {
			tick, k.seq = tick+1, 0
		}
	} else {
		k.seq = 0
	}
	k.last = tick
	seq := k.seq
	k.mu.Unlock()

	b := make([]byte, 0, TicksWidth+2+len(k.Writer)+seqWidth)
	b = appendPadded(b, uint64(MaxTicks-tick), TicksWidth)
	b = append(b, '_')
	if k.Writer != "" {
		b = append(b, k.Writer...)
		b = append(b, '_')
	}
	b = appendPadded(b, uint64(99999-seq), seqWidth)
	return unsafeString(b), nil
}
