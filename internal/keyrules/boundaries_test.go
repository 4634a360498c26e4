package keyrules

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Queue and container names are 3 to 63 characters: both ends accepted, one
// beyond each refused with the rule it breaks.
func TestQueueAndContainerNameLengthBoundaries(t *testing.T) {
	for name, validate := range map[string]func(string) error{
		"queue": ValidateQueueName, "container": ValidateContainerName,
	} {
		for _, c := range []struct {
			n    int
			rule error
		}{{2, ErrTooShort}, {3, nil}, {63, nil}, {64, ErrTooLong}} {
			err := validate(strings.Repeat("a", c.n))
			if c.rule == nil && err != nil || c.rule != nil && (!errors.Is(err, c.rule) || !errors.Is(err, ErrInvalidName)) {
				t.Errorf("%s name of %d characters: %v, want %v", name, c.n, err, c.rule)
			}
		}
	}
	if MinQueueName != 3 || MaxQueueName != 63 || MinContainerName != 3 || MaxContainerName != 63 {
		t.Errorf("name limits %d-%d and %d-%d, want 3-63", MinQueueName, MaxQueueName, MinContainerName, MaxContainerName)
	}
}

// A key is at most 512 UTF-16 code units, counted as the service counts
// them: a character above U+FFFF is two units, any other one.
func TestKeyLengthCountsUTF16Units(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "é": 1, "中": 1, "😀": 2, "aé😀": 4, "\xff": 1} {
		if got := UTF16Len(s); got != want {
			t.Errorf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
	}
	at := strings.Repeat("é", 512)
	if err := ValidateRowKey(at); err != nil {
		t.Errorf("512 units: %v", err)
	}
	if err := ValidateRowKey(at + "a"); !errors.Is(err, ErrTooLong) {
		t.Errorf("513 units: %v, want ErrTooLong", err)
	}
	// Join applies the same limit to the key it builds.
	if k, err := (Compound{}).Join(strings.Repeat("a", 255), strings.Repeat("b", 256)); err != nil || len(k) != 512 {
		t.Errorf("a joined key of 512 units: %q, %v", k, err)
	}
	if _, err := (Compound{}).Join(strings.Repeat("a", 256), strings.Repeat("b", 256)); !errors.Is(err, ErrTooLong) {
		t.Errorf("a joined key of 513 units: %v, want ErrTooLong", err)
	}
}

// A component holding the separator anywhere, at its start too, is refused:
// the key would split differently.
func TestJoinRefusesTheSeparatorAnywhere(t *testing.T) {
	for _, part := range []string{"_a", "a_", "a_b", "_"} {
		_, err := Compound{}.Join(part, "x")
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Rule != ErrForbiddenChar || ve.Char != '_' || ve.Pos != strings.Index(part, "_") {
			t.Errorf("Compound{}.Join(%q, x): %v, want the separator named at byte %d", part, err, strings.Index(part, "_"))
		}
	}
}

// The messages of refused values name the numbers involved exactly.
func TestValidationErrorTexts(t *testing.T) {
	_, errSplit := Compound{}.SplitN("a_b", 12)
	_, errFixed := FixedUint(123456789012, 11)
	_, errWidth := FixedUint(1, 21)
	_, errShard := ShardName("events", 16, 16)
	cases := []struct {
		err  error
		want string
	}{
		{errSplit, `keys: key "a_b": bad syntax (want 12 components separated by _, got 2)`},
		{errFixed, `keys: key "123456789012": out of range (does not fit in 11 digits)`},
		{errWidth, `keys: key "21": out of range (width is 1 to 20)`},
		{errShard, `keys: key "16": out of range (bucket is 0 to n-1 and n >= 1)`},
		{ValidateTableName("1abc"), `keys: table name "1abc": bad syntax U+0031 at byte 0 (must start with a letter)`},
		{ValidateRowKey("a/b"), `keys: RowKey "a/b": forbidden character U+002F at byte 1 (not allowed in PartitionKey or RowKey: / \ # ? U+0000-U+001F U+007F-U+009F)`},
		{invalid("key", strings.Repeat("x", 60), ErrTooLong, ""), `keys: key "` + strings.Repeat("x", 48) + `…": too long`},
	}
	for _, c := range cases {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("Error() = %v\nwant      %s", c.err, c.want)
		}
	}
}

// Daily.Next is the next midnight UTC, Hourly.Next the next hour and
// Monthly.Next the first of the next month, across month and year ends.
func TestPeriodNextIsExact(t *testing.T) {
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	for _, c := range []struct {
		p        Period
		t, start time.Time
		next     time.Time
	}{
		{Daily, at(2024, 1, 31, 13, 5), at(2024, 1, 31, 0, 0), at(2024, 2, 1, 0, 0)},
		{Daily, at(2024, 12, 31, 23, 59), at(2024, 12, 31, 0, 0), at(2025, 1, 1, 0, 0)},
		{Daily, at(2024, 2, 28, 0, 0), at(2024, 2, 28, 0, 0), at(2024, 2, 29, 0, 0)},
		{Hourly, at(2024, 12, 31, 23, 59), at(2024, 12, 31, 23, 0), at(2025, 1, 1, 0, 0)},
		{Monthly, at(2024, 12, 15, 8, 0), at(2024, 12, 1, 0, 0), at(2025, 1, 1, 0, 0)},
		{Monthly, at(2024, 1, 31, 8, 0), at(2024, 1, 1, 0, 0), at(2024, 2, 1, 0, 0)},
	} {
		if got := c.p.Start(c.t); !got.Equal(c.start) {
			t.Errorf("%v.Start(%v) = %v, want %v", c.p, c.t, got, c.start)
		}
		if got := c.p.Next(c.t); !got.Equal(c.next) {
			t.Errorf("%v.Next(%v) = %v, want %v", c.p, c.t, got, c.next)
		}
	}
	if s := Period(7).String(); s != "Period(7)" {
		t.Errorf("unknown period named %q", s)
	}
}

// A refused period table name yields the zero start and generation 0 with
// its error.
func TestParsePeriodTableFailsWithZeroValues(t *testing.T) {
	for _, name := range []string{"logs2024010", "logs20240101x001", "logs20240101g000", "logs20240101g01", "other20240101"} {
		start, gen, err := ParsePeriodTable("logs", Daily, name)
		if err == nil || !start.IsZero() || gen != 0 || !errors.Is(err, ErrBadSyntax) {
			t.Errorf("ParsePeriodTable(%q) = %v, %d, %v; want zero values and ErrBadSyntax", name, start, gen, err)
		}
	}
}

// One shard is bucket 0, named with one digit.
func TestShardNameOfASingleShard(t *testing.T) {
	if s, err := ShardName("events", 0, 1); err != nil || s != "events_0" {
		t.Errorf("ShardName(events, 0, 1) = %q, %v", s, err)
	}
	for _, c := range [][2]int{{1, 1}, {-1, 4}, {0, 0}} {
		if _, err := ShardName("events", c[0], c[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("ShardName(events, %d, %d): %v, want ErrOutOfRange", c[0], c[1], err)
		}
	}
}

// Number keys refuse what does not fit their width and type, and return zero
// with the error.
func TestNumberKeysRefuseOverflow(t *testing.T) {
	if n, err := ParseUint64("18446744073709551615"); err != nil || n != 1<<64-1 {
		t.Errorf("the largest uint64: %d, %v", n, err)
	}
	for _, s := range []string{"18446744073709551616", "99999999999999999999", "20000000000000000000"} {
		if n, err := ParseUint64(s); !errors.Is(err, ErrOutOfRange) || n != 0 {
			t.Errorf("ParseUint64(%q) = %d, %v; want 0 and ErrOutOfRange", s, n, err)
		}
	}
	if n, err := ParseInt64("09223372036854775807"); err != nil || n != 1<<63-1 {
		t.Errorf("the largest int64: %d, %v", n, err)
	}
	for _, s := range []string{"09223372036854775808", "-9223372036854775808"} {
		if n, err := ParseInt64(s); !errors.Is(err, ErrOutOfRange) || n != 0 {
			t.Errorf("ParseInt64(%q) = %d, %v; want 0 and ErrOutOfRange", s, n, err)
		}
	}
	for _, s := range []string{"19223372036854775807", "0922337203685477580", "x9223372036854775807"} {
		if n, err := ParseInt64(s); !errors.Is(err, ErrBadSyntax) || n != 0 {
			t.Errorf("ParseInt64(%q) = %d, %v; want 0 and ErrBadSyntax", s, n, err)
		}
	}
}

// DateTime's range is 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.9999999Z,
// both ends included: an instant one nanosecond outside either is refused,
// and clamped by Ticks.
func TestDateTimeBounds(t *testing.T) {
	lo := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(9999, 12, 31, 23, 59, 59, 999_999_900, time.UTC)
	if !minTime.Equal(lo) || !maxTime.Equal(hi) {
		t.Fatalf("minTime %v, maxTime %v", minTime, maxTime)
	}
	for _, ok := range []time.Time{lo, hi} {
		if err := CheckTicksRange(ok); err != nil {
			t.Errorf("CheckTicksRange(%v): %v", ok, err)
		}
	}
	for _, out := range []time.Time{lo.Add(-time.Nanosecond), hi.Add(time.Nanosecond), time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC)} {
		if err := CheckTicksRange(out); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("CheckTicksRange(%v): %v, want ErrOutOfRange", out, err)
		}
	}
	if got := Ticks(lo.Add(-time.Hour)); got != "0000000000000000000" {
		t.Errorf("Ticks before the lower bound = %s, want it clamped to 0", got)
	}
	if got := Ticks(lo); got != "0000000000000000000" {
		t.Errorf("Ticks(minTime) = %s", got)
	}
	if got := Ticks(lo.Add(100 * time.Nanosecond)); got != "0000000000000000001" {
		t.Errorf("Ticks(minTime + 100 ns) = %s", got)
	}
	if got := ticksOf(hi.Add(time.Hour)); got != MaxTicks {
		t.Errorf("ticksOf after the upper bound = %d, want MaxTicks", got)
	}
	if got := timeOfTicks(0); !got.Equal(lo) {
		t.Errorf("timeOfTicks(0) = %v", got)
	}
	// Before 1970 the tick count is below the Unix epoch's: timeOfTicks
	// must still land on the exact 100 ns.
	pre := time.Date(1969, 12, 31, 23, 59, 59, 999_999_900, time.UTC)
	if got := timeOfTicks(ticksOf(pre)); !got.Equal(pre) {
		t.Errorf("timeOfTicks(ticksOf(%v)) = %v", pre, got)
	}
}

// ParseLogKey reads only keys LogKeys issues: a non-digit anywhere in the
// inverted ticks or the sequence is refused.
func TestParseLogKeyRefusesNonDigits(t *testing.T) {
	var lk LogKeys
	k, err := lk.Next(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if at, w, err := ParseLogKey(k); err != nil || w != "" || !at.Equal(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("ParseLogKey(%q) = %v, %q, %v", k, at, w, err)
	}
	for _, i := range []int{0, 18, 20, len(k) - 1} {
		bad := k[:i] + "x" + k[i+1:]
		if at, w, err := ParseLogKey(bad); err == nil || !at.IsZero() || w != "" {
			t.Errorf("ParseLogKey(%q) = %v, %q, %v; want an error and zero values", bad, at, w, err)
		}
	}
}

// DecodeTuple of the empty string is the empty tuple; a truncated escape is
// refused, not read past the end.
func TestDecodeTupleEdges(t *testing.T) {
	if out, err := DecodeTuple(""); err != nil || len(out) != 0 {
		t.Errorf(`DecodeTuple("") = %q, %v`, out, err)
	}
	for _, key := range []string{"a&", "a.", "a>", "a[", "a\"2", "a~7", "a&2!", "abc"} {
		if out, err := DecodeTuple(key); !errors.Is(err, ErrBadSyntax) {
			t.Errorf("DecodeTuple(%q) = %q, %v; want ErrBadSyntax", key, out, err)
		}
	}
}

// The tuple length limit counts each character's encoded width: the
// two-character escapes of & ' . / > ? [ \ count two.
func TestEncodeTupleCountsEscapes(t *testing.T) {
	for _, c := range "&'./>?[\\" {
		ok := strings.Repeat(string(c), 255) // 510 + the end mark
		if k, err := EncodeTuple(ok); err != nil || len(k) != 511 {
			t.Errorf("255 × %q: %d characters, %v", c, len(k), err)
		}
		if _, err := EncodeTuple(ok + string(c)); !errors.Is(err, ErrTooLong) {
			t.Errorf("256 × %q encodes to 513 characters: %v, want ErrTooLong", c, err)
		}
	}
}

// A table name starts with a letter: any digit first, 0 included, is
// refused at byte 0.
func TestTableNameStartsWithALetter(t *testing.T) {
	for _, name := range []string{"0abc", "5abc", "9abc"} {
		var ve *ValidationError
		if err := ValidateTableName(name); !errors.As(err, &ve) || ve.Rule != ErrBadSyntax || ve.Pos != 0 {
			t.Errorf("ValidateTableName(%q): %v, want ErrBadSyntax at byte 0", name, err)
		}
	}
	if err := ValidateTableName("a09"); err != nil {
		t.Errorf("a09: %v", err)
	}
}

// A blob name has at most 254 path segments, and its last character is
// neither '.' nor '/', reported at its byte.
func TestBlobNameBoundaries(t *testing.T) {
	at := strings.Repeat("a/", 253) + "a" // 254 segments
	if err := ValidateBlobName(at); err != nil {
		t.Errorf("254 segments: %v", err)
	}
	if err := ValidateBlobName("a/" + at); !errors.Is(err, ErrTooLong) {
		t.Errorf("255 segments: %v, want ErrTooLong", err)
	}
	for _, name := range []string{"dir/file.", "dir/"} {
		var ve *ValidationError
		if err := ValidateBlobName(name); !errors.As(err, &ve) || ve.Rule != ErrBadSyntax || ve.Pos != len(name)-1 {
			t.Errorf("ValidateBlobName(%q): %v, want ErrBadSyntax at byte %d", name, err, len(name)-1)
		}
	}
}

// After its first character a property name may hold digits, combining marks
// (Mn, Mc) and connector punctuation (Pc), as a C# identifier may.
func TestPropertyNameContinuationCharacters(t *testing.T) {
	for _, name := range []string{"a1", "e\u0301", "a\u0903b", "a\u203fb", "_x"} {
		if err := ValidatePropertyName(name); err != nil {
			t.Errorf("ValidatePropertyName(%q): %v", name, err)
		}
	}
	for _, name := range []string{"1a", "\u0301e", "\u203fa", "a-b"} {
		if err := ValidatePropertyName(name); !errors.Is(err, ErrForbiddenChar) {
			t.Errorf("ValidatePropertyName(%q): %v, want ErrForbiddenChar", name, err)
		}
	}
}

// An out-of-range bucket is named in the error whatever its value, the
// most negative int included.
func TestShardNameNamesAnyBucket(t *testing.T) {
	_, err := ShardName("events", math.MinInt64, 4)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Value != "-9223372036854775808" {
		t.Errorf("ShardName(events, MinInt64, 4): %v", err)
	}
}

// FixedUint takes n when it has at most width digits, counted exactly at
// each power of ten.
func TestFixedUintDigitBoundaries(t *testing.T) {
	for _, c := range []struct {
		n     uint64
		width int
		want  string
	}{{9, 1, "9"}, {10, 2, "10"}, {99, 2, "99"}, {100, 3, "100"}, {1<<64 - 1, 20, "18446744073709551615"}} {
		if got, err := FixedUint(c.n, c.width); err != nil || got != c.want {
			t.Errorf("FixedUint(%d, %d) = %q, %v; want %q", c.n, c.width, got, err, c.want)
		}
	}
	for _, c := range []struct {
		n     uint64
		width int
	}{{10, 1}, {11, 1}, {100, 2}, {1000, 3}} {
		if got, err := FixedUint(c.n, c.width); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("FixedUint(%d, %d) = %q, %v; want ErrOutOfRange", c.n, c.width, got, err)
		}
	}
	// A non-digit is refused at its byte, with zero.
	if n, err := ParseUint64("0000000000000000001x"); !errors.Is(err, ErrBadSyntax) || n != 0 {
		t.Errorf("ParseUint64 with a non-digit: %d, %v", n, err)
	}
	var ve *ValidationError
	if _, err := ParseFixedUint("1x3", 3); !errors.As(err, &ve) || ve.Pos != 1 || ve.Char != 'x' {
		t.Errorf("ParseFixedUint(1x3): %v, want the x at byte 1", err)
	}
}

// Period tables hold the years 1000 to 9999, both included.
func TestPeriodTableYearBounds(t *testing.T) {
	for _, y := range []int{1000, 9999} {
		if _, err := PeriodTable("logs", Monthly, time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC), 0); err != nil {
			t.Errorf("year %d: %v", y, err)
		}
	}
	for _, y := range []int{999, 10000} {
		if name, err := PeriodTable("logs", Monthly, time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC), 0); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("year %d: %q, %v; want ErrOutOfRange", y, name, err)
		}
	}
}

// Prefix refuses what Join refuses.
func TestCompoundPrefixRefusesWhatJoinRefuses(t *testing.T) {
	if p, err := (Compound{}).Prefix("a_b"); !errors.Is(err, ErrForbiddenChar) || p != "" {
		t.Errorf("Prefix(a_b) = %q, %v; want ErrForbiddenChar", p, err)
	}
	if p, err := (Compound{Sep: "|"}).Prefix("a", "b"); err != nil || p != "a|b|" {
		t.Errorf("Prefix(a, b) with |: %q, %v", p, err)
	}
}

// Negative numbers in messages keep their sign.
func TestNegativeValuesNamedInErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := FixedUint(1, -1); return err }(), "-1"},
		{func() error { _, err := ShardName("events", -12, 4); return err }(), "-12"},
	} {
		var ve *ValidationError
		if !errors.As(c.err, &ve) || ve.Value != c.want {
			t.Errorf("%v: want the value %s named", c.err, c.want)
		}
	}
}

// TestCharacterClassEdges: each validator accepts the first and last
// character of every range its rule allows and refuses the characters just
// outside, with the rule's error. An off-by-one at a range's end would let
// a name through that the service refuses, or refuse one it accepts.
func TestCharacterClassEdges(t *testing.T) {
	cases := []struct {
		name     string
		validate func(string) error
		wrap     func(c string) string // c in a position where only the class matters
		ok       []string
		refused  []string
		rule     error
	}{
		{"PartitionKey", ValidatePartitionKey, func(c string) string { return "a" + c + "b" },
			[]string{"\u0020", "\u007e", "\u00a0", "\ufffd"},
			[]string{"\u0000", "\u001f", "\u007f", "\u0080", "\u009f"}, ErrControlChar},
		{"RowKey", ValidateRowKey, func(c string) string { return c },
			[]string{"\u0020", "\u007e", "\u00a0"},
			[]string{"\u001f", "\u007f", "\u009f"}, ErrControlChar},
		{"table name", ValidateTableName, func(c string) string { return "ab" + c },
			[]string{"a", "z", "A", "Z", "0", "9"},
			[]string{"`", "{", "@", "[", "/", ":", "-"}, ErrForbiddenChar},
		{"queue name", ValidateQueueName, func(c string) string { return "ab" + c + "d" },
			[]string{"a", "z", "0", "9", "-"},
			[]string{"`", "{", "/", ":", "A", "Z", "_"}, ErrForbiddenChar},
		{"container name", ValidateContainerName, func(c string) string { return c + "bc" },
			[]string{"a", "z", "0", "9"},
			[]string{"`", "{", "/", ":", "A"}, ErrForbiddenChar},
		{"blob name", ValidateBlobName, func(c string) string { return "a" + c + "b" },
			[]string{"\u0020", "\u007e", "\u0080", "\u009f"},
			[]string{"\u0000", "\u001f", "\u007f"}, ErrControlChar},
	}
	for _, c := range cases {
		for _, ch := range c.ok {
			if err := c.validate(c.wrap(ch)); err != nil {
				t.Errorf("%s %q (U+%04X): %v, want it accepted", c.name, c.wrap(ch), []rune(ch)[0], err)
			}
		}
		for _, ch := range c.refused {
			if err := c.validate(c.wrap(ch)); !errors.Is(err, c.rule) {
				t.Errorf("%s %q (U+%04X): %v, want %v", c.name, c.wrap(ch), []rune(ch)[0], err, c.rule)
			}
		}
	}
}
