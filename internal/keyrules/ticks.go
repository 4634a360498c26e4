package keyrules

import (
	"strings"
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

// minTime and maxTime bound what .NET's DateTime can hold (CheckTicksRange).
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// ticksOf is t in .NET ticks, truncated to 100 ns. It is clamped to
// [0, MaxTicks]; use CheckTicksRange to refuse out-of-range instants instead.
func ticksOf(t time.Time) int64 {
	if t.Before(minTime) {
		return 0
	}
	if t.After(maxTime) {
		return MaxTicks
	}
	// Split into seconds and nanoseconds so instants far from 1970 do not
	// overflow time.Duration.
	return (t.Unix()*10_000_000 + unixEpochTicks) + int64(t.Nanosecond()/100)
}

// timeOfTicks is the UTC instant of a .NET tick count in [0, MaxTicks].
func timeOfTicks(ticks int64) time.Time {
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
	if t.Before(minTime) || t.After(maxTime) {
		return invalid("key", t.UTC().Format(time.RFC3339Nano), ErrOutOfRange, "DateTime holds 0001-01-01 to 9999-12-31T23:59:59.9999999Z")
	}
	return nil
}

func formatTicks(ticks int64) string { return padUint(uint64(ticks), TicksWidth) }

// Ticks formats t as .NET's string.Format("{0:D19}", t.ToUniversalTime().Ticks):
// ascending, oldest first. Out-of-range instants are clamped (see ticksOf).
func Ticks(t time.Time) string { return formatTicks(ticksOf(t)) }

// InvertedTicks formats t as .NET's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.ToUniversalTime().Ticks),
// the guide's log-tail RowKey: newest first. Go and .NET writers produce the
// same keys. Out-of-range instants are clamped (see ticksOf).
func InvertedTicks(t time.Time) string { return formatTicks(MaxTicks - ticksOf(t)) }

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
	return timeOfTicks(n), nil
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
	return timeOfTicks(MaxTicks - n), nil
}

// seqWidth digits of descending sequence follow a tick: the sequence
// counts every key one LogKeys issues, and 10^19 keys never run out.
const seqWidth = 19

// maxSeq is the largest sequence number, written first.
const maxSeq uint64 = 9999999999999999999

// legacySeqWidth is the sequence width of keys issued before the sequence
// counted every key (five digits, restarted per tick); ParseLogKey still
// reads them.
const legacySeqWidth = 5

// LogKeys issues log-tail RowKeys: the inverted ticks of the instant given
// (keys.InvertedTicks), then "_", an optional writer id and "_", and a
// descending sequence number. The key records the instant exactly, in
// whatever order the instants come (entries appended late, several
// partitions, a clock that steps back). The sequence counts every key this
// LogKeys issues and never repeats, so keys issued for the same tick are
// unique and sort newest first (the last issued first). Writers in other
// processes need distinct Writer ids. Safe for concurrent use.
type LogKeys struct {
	// Writer distinguishes concurrent writers; it must be valid in a key and
	// must not contain "_". Default: empty.
	Writer string

	mu  sync.Mutex
	seq uint64 // keys issued so far
}

// Next returns the key for an entry written at t.
func (k *LogKeys) Next(t time.Time) (string, error) {
	if err := CheckTicksRange(t); err != nil {
		return "", err
	}
	if err := checkKeyChars("key component", k.Writer); err != nil {
		return "", err
	}
	if strings.Contains(k.Writer, "_") {
		return "", invalid("writer id", k.Writer, ErrForbiddenChar, "a log key's writer id must not contain \"_\", which separates the key's parts")
	}
	k.mu.Lock()
	seq := k.seq
	if seq > maxSeq {
		k.mu.Unlock()
		return "", invalid("log key", "", ErrOutOfRange, "this LogKeys issued all 10^19 sequence numbers")
	}
	k.seq++
	k.mu.Unlock()

	b := make([]byte, 0, TicksWidth+2+len(k.Writer)+seqWidth)
	b = appendPadded(b, uint64(MaxTicks-ticksOf(t)), TicksWidth)
	b = append(b, '_')
	if k.Writer != "" {
		b = append(b, k.Writer...)
		b = append(b, '_')
	}
	b = appendPadded(b, maxSeq-seq, seqWidth)
	return unsafeString(b), nil
}

// ParseLogKey reads a key that LogKeys issued: the instant it records and
// the writer id. Any other string is an error, so a reader can tell a log's
// entries from the other rows of a shared partition.
func ParseLogKey(s string) (at time.Time, writer string, err error) {
	bad := func(why string) error { return invalid("log key", s, ErrBadSyntax, why) }
	if len(s) < TicksWidth+2 || s[TicksWidth] != '_' {
		return time.Time{}, "", bad("a log key is 19 digits of inverted ticks, \"_\", [writer \"_\"] and a sequence number")
	}
	at, err = ParseInvertedTicks(s[:TicksWidth])
	if err != nil {
		return time.Time{}, "", err
	}
	rest := s[TicksWidth+1:]
	seq := rest
	if i := strings.LastIndexByte(rest, '_'); i >= 0 {
		writer, seq = rest[:i], rest[i+1:]
		if writer == "" || strings.Contains(writer, "_") {
			return time.Time{}, "", bad("the writer id is empty or holds \"_\"")
		}
	}
	if len(seq) != seqWidth && len(seq) != legacySeqWidth {
		return time.Time{}, "", bad("the sequence number has 19 digits (5 in keys issued by earlier versions)")
	}
	for i := 0; i < len(seq); i++ {
		if seq[i] < '0' || seq[i] > '9' {
			return time.Time{}, "", bad("the sequence number is not digits")
		}
	}
	return at, writer, nil
}
