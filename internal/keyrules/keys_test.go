package keyrules

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

func TestValidateKeys(t *testing.T) {
	long := strings.Repeat("a", MaxKeyUTF16)
	tests := []struct {
		name string
		in   string
		rule error
		pos  int
	}{
		{"empty is valid", "", nil, 0},
		{"guide key", "empid_000123", nil, 0},
		{"max length", long, nil, 0},
		{"one over", long + "a", ErrTooLong, -1},
		{"256 astral chars are 512 units", strings.Repeat("😀", 256), nil, 0},
		{"257 astral chars are 514 units", strings.Repeat("😀", 257), ErrTooLong, -1},
		{"slash", "a/b", ErrForbiddenChar, 1},
		{"backslash", `a\b`, ErrForbiddenChar, 1},
		{"hash", "#", ErrForbiddenChar, 0},
		{"question", "ab?", ErrForbiddenChar, 2},
		{"NUL", "a\x00", ErrControlChar, 1},
		{"tab", "\t", ErrControlChar, 0},
		{"DEL", "\x7f", ErrControlChar, 0},
		{"C1 control", "é\u0085", ErrControlChar, 2},
		{"U+00A0 is fine", "\u00a0", nil, 0},
		{"invalid UTF-8", "a\xff", ErrInvalidUTF8, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []func(string) error{ValidatePartitionKey, ValidateRowKey} {
				err := f(tc.in)
				if tc.rule == nil {
					if err != nil {
						t.Fatalf("unexpected error: %v", err)
					}
					continue
				}
				if !errors.Is(err, tc.rule) || !errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrInvalidName) {
					t.Fatalf("err = %v, want rule %v in class ErrInvalidKey", err, tc.rule)
				}
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Pos != tc.pos {
					t.Fatalf("err = %#v, want Pos %d", err, tc.pos)
				}
			}
		})
	}
}

func TestValidateNames(t *testing.T) {
	type fn = func(string) error
	tests := []struct {
		name string
		f    fn
		in   string
		rule error
	}{
		{"table ok", ValidateTableName, "Employees2012", nil},
		{"table min", ValidateTableName, "abc", nil},
		{"table max", ValidateTableName, "a" + strings.Repeat("b", 62), nil},
		{"table too long", ValidateTableName, "a" + strings.Repeat("b", 63), ErrTooLong},
		{"table too short", ValidateTableName, "ab", ErrTooShort},
		{"table empty", ValidateTableName, "", ErrEmpty},
		{"table digit first", ValidateTableName, "1abc", ErrBadSyntax},
		{"table dash", ValidateTableName, "ab-c", ErrForbiddenChar},
		{"table underscore", ValidateTableName, "ab_c", ErrForbiddenChar},
		{"table non-ASCII", ValidateTableName, "abé", ErrForbiddenChar},
		{"table reserved", ValidateTableName, "Tables", ErrReserved},
		{"queue ok", ValidateQueueName, "archive-queue-1", nil},
		{"queue upper", ValidateQueueName, "Archive", ErrForbiddenChar},
		{"queue double dash", ValidateQueueName, "a--b", ErrBadSyntax},
		{"queue leading dash", ValidateQueueName, "-ab", ErrBadSyntax},
		{"queue trailing dash", ValidateQueueName, "ab-", ErrBadSyntax},
		{"queue too short", ValidateQueueName, "ab", ErrTooShort},
		{"queue too long", ValidateQueueName, strings.Repeat("a", 64), ErrTooLong},
		{"container ok", ValidateContainerName, "photos", nil},
		{"container root", ValidateContainerName, "$root", nil},
		{"container dollar", ValidateContainerName, "$other", ErrForbiddenChar},
		{"container underscore", ValidateContainerName, "a_b", ErrForbiddenChar},
		{"blob ok", ValidateBlobName, "logs/2026/11/21/10.log", nil},
		{"blob unicode", ValidateBlobName, "fotos/año.jpg", nil},
		{"blob empty", ValidateBlobName, "", ErrEmpty},
		{"blob trailing dot", ValidateBlobName, "a.", ErrBadSyntax},
		{"blob trailing slash", ValidateBlobName, "a/", ErrBadSyntax},
		{"blob too long", ValidateBlobName, strings.Repeat("a", 1025), ErrTooLong},
		{"blob max", ValidateBlobName, strings.Repeat("é", 1024), nil},
		{"blob segments", ValidateBlobName, strings.Repeat("a/", 254) + "a", ErrTooLong},
		{"blob control", ValidateBlobName, "a\nb", ErrControlChar},
		{"blob invalid utf8", ValidateBlobName, "a\xffb", ErrInvalidUTF8},
		{"property ok", ValidatePropertyName, "EmployeeIDs", nil},
		{"property underscore", ValidatePropertyName, "_x1", nil},
		{"property unicode letter", ValidatePropertyName, "Año", nil},
		{"property digit first", ValidatePropertyName, "1x", ErrForbiddenChar},
		{"property space", ValidatePropertyName, "Manager Rating", ErrForbiddenChar},
		{"property dash", ValidatePropertyName, "a-b", ErrForbiddenChar},
		{"property too long", ValidatePropertyName, strings.Repeat("p", 256), ErrTooLong},
		{"property max", ValidatePropertyName, strings.Repeat("p", 255), nil},
		{"property system", ValidatePropertyName, "Timestamp", ErrReserved},
		{"property empty", ValidatePropertyName, "", ErrEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f(tc.in)
			if tc.rule == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.rule) || !errors.Is(err, ErrInvalidName) {
				t.Fatalf("err = %v, want %v and ErrInvalidName", err, tc.rule)
			}
			if !strings.Contains(err.Error(), tc.rule.Error()) {
				t.Fatalf("message %q does not name the rule", err)
			}
		})
	}
}

func TestCompound(t *testing.T) {
	k, err := Compound{}.Join("000123", "2012")
	if err != nil || k != "000123_2012" {
		t.Fatalf("Join = %q, %v", k, err)
	}
	if got := (Compound{}).Split(k); !slices.Equal(got, []string{"000123", "2012"}) {
		t.Fatalf("Split = %q", got)
	}
	c := Compound{Sep: "-"}
	if k, _ := c.Join("a_b", "c"); k != "a_b-c" {
		t.Fatalf("custom sep Join = %q", k)
	}
	if _, err := (Compound{}).Join("a_b", "c"); !errors.Is(err, ErrForbiddenChar) || !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("component with separator: %v", err)
	}
	if _, err := (Compound{}).Join("a/b"); !errors.Is(err, ErrForbiddenChar) {
		t.Fatalf("component with slash: %v", err)
	}
	if _, err := (Compound{}).Join(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("no components: %v", err)
	}
	if _, err := (Compound{}).Join(strings.Repeat("a", 300), strings.Repeat("b", 300)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("long: %v", err)
	}
	if _, err := (Compound{Sep: "/"}).Join("a"); !errors.Is(err, ErrForbiddenChar) {
		t.Fatalf("bad separator: %v", err)
	}
	if p, _ := (Compound{}).Prefix("000123"); p != "000123_" {
		t.Fatalf("Prefix = %q", p)
	}
	if _, err := (Compound{}).SplitN("a_b_c", 2); !errors.Is(err, ErrBadSyntax) {
		t.Fatalf("SplitN: %v", err)
	}
	if parts, err := (Compound{}).SplitN("a_b", 2); err != nil || parts[1] != "b" {
		t.Fatalf("SplitN = %q, %v", parts, err)
	}
}

func TestTuple(t *testing.T) {
	k, err := EncodeTuple("Sales", "000123")
	if err != nil || k != "Sales!000123!" {
		t.Fatalf("EncodeTuple = %q, %v", k, err)
	}
	odd := []string{"", "a/b\\c#d?e", "\x00\x01!\"#$", "~\x7f\xff", "año 😀", ".>[", "O'Brien & co", "x"}
	k, err = EncodeTuple(odd...)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRowKey(k); err != nil || strings.ContainsRune(k, '\'') {
		t.Fatalf("encoding %q is not a valid, quote-free key: %v", k, err)
	}
	back, err := DecodeTuple(k)
	if err != nil || !slices.Equal(back, odd) {
		t.Fatalf("round trip: %q, %v", back, err)
	}
	ordered := [][]string{{}, {""}, {"", ""}, {"", "a"}, {"\x00"}, {" "}, {"!"}, {"#"}, {"#", "z"}, {"$"}, {"%"}, {"&"}, {"'"}, {"("}, {"."}, {"/"}, {"0"}, {">"}, {"?"}, {"A"}, {"["}, {"\\"}, {"]"}, {"a"}, {"a", ""}, {"a", "b"}, {"a\x00"}, {"ab"}, {"}"}, {"~"}, {"\x7f"}, {"é"}, {"😀"}}
	var prev string
	for i, tup := range ordered {
		k, err := EncodeTuple(tup...)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && !(prev < k) {
			t.Fatalf("order: %q (%q) !< %q (%q)", ordered[i-1], prev, tup, k)
		}
		prev = k
	}
	for _, bad := range []string{"a", "\"2", "\"ff!", "~00!", ".2!", "!a", "\x01!"} {
		if _, err := DecodeTuple(bad); !errors.Is(err, ErrBadSyntax) {
			t.Errorf("DecodeTuple(%q) = %v, want ErrBadSyntax", bad, err)
		}
	}
	if _, err := EncodeTuple(strings.Repeat("/", 256)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("long tuple: %v", err)
	}
}

func TestNumbers(t *testing.T) {
	if s, _ := FixedUint(123, 6); s != "000123" {
		t.Fatalf("FixedUint = %q", s)
	}
	if _, err := FixedUint(1234567, 6); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("overflow: %v", err)
	}
	if _, err := FixedUint(1, 0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("width 0: %v", err)
	}
	if Uint64(math.MaxUint64) != "18446744073709551615" || Uint64(0) != "00000000000000000000" {
		t.Fatal("Uint64 extremes")
	}
	ints := []int64{math.MinInt64, math.MinInt64 + 1, -1e18, -10, -9, -1, 0, 1, 9, 10, 1e18, math.MaxInt64}
	for i, n := range ints {
		s := Int64(n)
		if len(s) != Int64Width {
			t.Fatalf("Int64(%d) = %q", n, s)
		}
		if back, err := ParseInt64(s); err != nil || back != n {
			t.Fatalf("ParseInt64(%q) = %d, %v", s, back, err)
		}
		if back, err := ParseDescInt64(DescInt64(n)); err != nil || back != n {
			t.Fatalf("ParseDescInt64 = %d, %v", back, err)
		}
		if i > 0 {
			if !(Int64(ints[i-1]) < s) {
				t.Fatalf("Int64 order %d %d", ints[i-1], n)
			}
			if !(DescInt64(ints[i-1]) > DescInt64(n)) {
				t.Fatalf("DescInt64 order %d %d", ints[i-1], n)
			}
		}
	}
	uints := []uint64{0, 1, 9, 10, 999, 1 << 63, math.MaxUint64}
	for i, n := range uints {
		if back, err := ParseUint64(Uint64(n)); err != nil || back != n {
			t.Fatalf("ParseUint64 %d: %d %v", n, back, err)
		}
		if back, err := ParseDescUint64(DescUint64(n)); err != nil || back != n {
			t.Fatalf("ParseDescUint64 %d: %d %v", n, back, err)
		}
		if i > 0 && !(DescUint64(uints[i-1]) > DescUint64(n)) {
			t.Fatalf("DescUint64 order")
		}
	}
	for _, bad := range []string{"", "1", "0000000000000000000a", "99999999999999999999"} {
		if _, err := ParseUint64(bad); err == nil {
			t.Errorf("ParseUint64(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"+0000000000000000001", "09999999999999999999", "-999999999999999999x"} {
		if _, err := ParseInt64(bad); err == nil {
			t.Errorf("ParseInt64(%q) accepted", bad)
		}
	}
	if n, err := ParseFixedUint("000123", 6); err != nil || n != 123 {
		t.Fatalf("ParseFixedUint = %d, %v", n, err)
	}
}

// Values computed by .NET: new DateTime(y, m, d, ..., DateTimeKind.Utc).Ticks.
func TestTicksMatchDotNet(t *testing.T) {
	tests := []struct {
		t     time.Time
		ticks int64
	}{
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), 621355968000000000},
		{time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), 634609728000000000},
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 630822816000000000},
		{time.Date(1969, 12, 31, 23, 59, 59, 999999900, time.UTC), 621355967999999999},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), MaxTicks},
		// Sub-tick nanoseconds are truncated, as DateTime cannot hold them.
		{time.Date(2012, 1, 1, 0, 0, 0, 199, time.UTC), 634609728000000001},
		// The zone does not matter: .NET converts with ToUniversalTime first.
		{time.Date(2012, 1, 1, 1, 0, 0, 0, time.FixedZone("CET", 3600)), 634609728000000000},
	}
	for _, tc := range tests {
		if got := ticksOf(tc.t); got != tc.ticks {
			t.Errorf("ticksOf(%v) = %d, want %d", tc.t, got, tc.ticks)
		}
		want := MaxTicks - tc.ticks
		if got := InvertedTicks(tc.t); got != padUint(uint64(want), 19) {
			t.Errorf("InvertedTicks(%v) = %s, want %019d", tc.t, got, want)
		}
		back, err := ParseInvertedTicks(InvertedTicks(tc.t))
		if err != nil || !back.Equal(tc.t.Truncate(100)) {
			t.Errorf("ParseInvertedTicks round trip of %v = %v, %v", tc.t, back, err)
		}
		back, err = ParseTicks(Ticks(tc.t))
		if err != nil || !back.Equal(tc.t.Truncate(100)) || back.Location() != time.UTC {
			t.Errorf("ParseTicks round trip of %v = %v, %v", tc.t, back, err)
		}
	}
	if InvertedTicks(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)) != "2534023007999999999" {
		t.Fatal("epoch inverted ticks")
	}
	if ticksOf(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)) != 0 || ticksOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) != MaxTicks {
		t.Fatal("clamping")
	}
	if err := CheckTicksRange(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("CheckTicksRange: %v", err)
	}
	for _, bad := range []string{"", "123", "999999999999999999a", "9999999999999999999"} {
		if _, err := ParseInvertedTicks(bad); err == nil {
			t.Errorf("ParseInvertedTicks(%q) accepted", bad)
		}
	}
}

func TestLogKeys(t *testing.T) {
	var lk LogKeys
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var prev string
	for i := 0; i < 5; i++ {
		k, err := lk.Next(at) // same tick every time
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && !(k < prev) {
			t.Fatalf("same-tick keys must sort newest first: %q then %q", prev, k)
		}
		if got, err := ParseInvertedTicks(k); err != nil || !got.Equal(at) {
			t.Fatalf("ParseInvertedTicks(%q) = %v, %v", k, got, err)
		}
		prev = k
	}
	// A step back of the clock, or an entry appended late: the key records
	// the instant given, and stays unique.
	k, _ := lk.Next(at.Add(-time.Second))
	if got, _ := ParseInvertedTicks(k); !got.Equal(at.Add(-time.Second)) || !(k > prev) {
		t.Fatalf("an earlier instant: %q records %v", k, got)
	}
	later, _ := lk.Next(at.Add(time.Millisecond))
	if got, _ := ParseInvertedTicks(later); !got.Equal(at.Add(time.Millisecond)) || !(later < prev) {
		t.Fatalf("a later instant: %q records %v", later, got)
	}
	again, _ := lk.Next(at)
	if !(again < prev) {
		t.Fatalf("the same tick again, after others: %q !< %q", again, prev)
	}
	w := LogKeys{Writer: "w1"}
	k, _ = w.Next(at)
	if k != InvertedTicks(at)+"_w1_9999999999999999999" {
		t.Fatalf("writer key = %q", k)
	}
	if got, writer, err := ParseLogKey(k); err != nil || writer != "w1" || !got.Equal(at) {
		t.Fatalf("ParseLogKey(%q) = %v, %q, %v", k, got, writer, err)
	}
	for _, notLog := range []string{"2026-11", "!profile", InvertedTicks(at), InvertedTicks(at) + "_", InvertedTicks(at) + "_w_1_99999", InvertedTicks(at) + "_123", InvertedTicks(at) + "x99999"} {
		if _, _, err := ParseLogKey(notLog); err == nil {
			t.Errorf("ParseLogKey(%q) accepted", notLog)
		}
	}
	if _, _, err := ParseLogKey(InvertedTicks(at) + "_99999"); err != nil {
		t.Errorf("a key of the earlier five-digit format: %v", err)
	}
	if _, err := (&LogKeys{Writer: "w_1"}).Next(at); !errors.Is(err, ErrForbiddenChar) {
		t.Fatalf("writer with _: %v", err)
	}
	if _, err := (&LogKeys{Writer: "a/b"}).Next(at); !errors.Is(err, ErrForbiddenChar) {
		t.Fatalf("bad writer: %v", err)
	}
	if _, err := lk.Next(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("out of range: %v", err)
	}
}

// Out-of-order instants over several partitions, as LogTail.AppendAt
// sees them: every key records its own instant and none repeats.
func TestLogKeysOutOfOrder(t *testing.T) {
	var lk LogKeys
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(200) {
		at := base.Add(time.Duration(i/2) * time.Second)
		k, err := lk.Next(at)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := ParseInvertedTicks(k); !got.Equal(at) || seen[k] {
			t.Fatalf("key %q for %v records %v (seen before: %v)", k, at, got, seen[k])
		}
		seen[k] = true
	}
}

func TestCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "b", -1}, {"b", "a", 1}, {"a", "ab", -1}, {"ab", "a", 1},
		{"\uffff", "😀", 1},          // UTF-16: U+FFFF > D83D
		{"\ue000", "\U00010000", 1}, // differs from Go's byte order
		{"😀", "😁", -1},              // same high surrogate
		{"é", "z", 1},
	}
	for _, tc := range tests {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if tc.want != 0 && Compare(tc.b, tc.a) != -tc.want {
			t.Errorf("Compare not antisymmetric on %q %q", tc.a, tc.b)
		}
	}
}

func utf16Less(a, b string) bool {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))) < 0
}

func TestPrefixRange(t *testing.T) {
	tests := []struct{ p, hi string }{
		{"", ""},
		{"empid_", "empid`"},
		{"a\uffff", "b"},
		{"\uffff", ""},
		{"x\U0010FFFF", "y"},
		{"\U0010FFFF\U0010FFFF", ""},
		{"x😀", "x😁"},
		{"x\U0001F7FF", "x\U0001F800"}, // low surrogate DFFF: bump the high one
		{"x\ud7ff", "x\U00010000"},     // skip the surrogate range
		{"x\U0010FFFF\uffff", "y"},
	}
	for _, tc := range tests {
		lo, hi := PrefixRange(tc.p)
		if lo != tc.p || hi != tc.hi {
			t.Errorf("PrefixRange(%q) = %q, %q; want %q", tc.p, lo, hi, tc.hi)
		}
		if hi != "" && !utf16Less(tc.p, hi) {
			t.Errorf("hi %q not above %q", hi, tc.p)
		}
	}
	members := []string{"empid_", "empid_000123", "empid_\uffff", "empid_😀"}
	outside := []string{"empid", "empid`", "empie", "email_x", "empid^"}
	lo, hi := PrefixRange("empid_")
	for _, k := range members {
		if !inPrefixRange(k, lo, hi) {
			t.Errorf("%q should be in range", k)
		}
	}
	for _, k := range outside {
		if inPrefixRange(k, lo, hi) {
			t.Errorf("%q should be outside range", k)
		}
	}
}

func TestShards(t *testing.T) {
	// FNV-1a 32 reference values; these must never change.
	if h := ShardBucket("", 1<<30); h != int(2166136261%(1<<30)) {
		t.Fatalf("ShardBucket empty = %d", h)
	}
	pinned := map[string]int{"a": 0xe40c292c % 16, "foobar": 0xbf9cf968 % 16}
	for k, want := range pinned {
		if got := ShardBucket(k, 16); got != want {
			t.Errorf("ShardBucket(%q, 16) = %d, want %d", k, got, want)
		}
	}
	if ShardBucket("anything", 1) != 0 || ShardBucket("x", 0) != 0 {
		t.Fatal("n <= 1")
	}
	if s, _ := ShardName("events", 7, 16); s != "events_07" {
		t.Fatalf("ShardName = %q", s)
	}
	if s, _ := ShardName("events", 3, 10); s != "events_3" {
		t.Fatalf("ShardName = %q", s)
	}
	if _, err := ShardName("events", 16, 16); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bucket out of range: %v", err)
	}
	if _, err := ShardName("ev/ents", 1, 16); !errors.Is(err, ErrForbiddenChar) {
		t.Fatalf("bad prefix: %v", err)
	}
	names := make([]string, 12)
	for b := range names {
		var err error
		if names[b], err = ShardName("p", b, 12); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.IsSorted(names) || names[11] != "p_11" {
		t.Fatalf("ShardName over 12 buckets = %q", names)
	}
}

func TestPeriodTables(t *testing.T) {
	at := time.Date(2026, 11, 21, 13, 45, 0, 0, time.UTC)
	tests := []struct {
		p    Period
		gen  int
		want string
	}{
		{Daily, 0, "Logins20261121"},
		{Hourly, 0, "Logins2026112113"},
		{Monthly, 0, "Logins202611"},
		{Daily, 2, "Logins20261121g002"},
	}
	for _, tc := range tests {
		name, err := PeriodTable("Logins", tc.p, at, tc.gen)
		if err != nil || name != tc.want {
			t.Fatalf("PeriodTable(%v, %d) = %q, %v", tc.p, tc.gen, name, err)
		}
		start, gen, err := ParsePeriodTable("Logins", tc.p, name)
		if err != nil || !start.Equal(tc.p.Start(at)) || gen != tc.gen {
			t.Fatalf("ParsePeriodTable(%q) = %v, %d, %v", name, start, gen, err)
		}
	}
	// Sortable: by time, then generation.
	a, _ := PeriodTable("Logins", Daily, at, 0)
	b, _ := PeriodTable("Logins", Daily, at, 1)
	c, _ := PeriodTable("Logins", Daily, Daily.Next(at), 0)
	if !(a < b && b < c) {
		t.Fatalf("order %q %q %q", a, b, c)
	}
	if _, err := PeriodTable("Log-ins", Daily, at, 0); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("bad prefix: %v", err)
	}
	if _, err := PeriodTable("L", Daily, at, 1000); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad generation: %v", err)
	}
	if _, err := PeriodTable("L", Period(9), at, 0); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("bad period: %v", err)
	}
	for _, bad := range []string{"Other20261121", "Logins2026112", "Logins20261321", "Logins20261121g000", "Logins20261121x001", "Logins20261121g01"} {
		if _, _, err := ParsePeriodTable("Logins", Daily, bad); !errors.Is(err, ErrBadSyntax) {
			t.Errorf("ParsePeriodTable(%q) = %v", bad, err)
		}
	}
	if !Monthly.Next(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)).Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatal("Monthly.Next")
	}
	if Hourly.String() != "hourly" || Period(0).String() != "Period(0)" {
		t.Fatal("String")
	}
}

// TestTupleComponentPrefix: a one-component tuple without its end marker
// starts the key of every tuple whose first component starts with that
// component (IntraPartitionIndex.Prefix reads by it), and of no other.
func TestTupleComponentPrefix(t *testing.T) {
	enc, _ := EncodeTuple("Jo/")
	p := strings.TrimSuffix(enc, "!")
	for _, tup := range [][]string{{"Jo/"}, {"Jo/nes", "000123"}, {"Jo/", "x"}} {
		k, _ := EncodeTuple(tup...)
		if !strings.HasPrefix(k, p) {
			t.Errorf("%q does not start with %q", k, p)
		}
	}
	for _, tup := range [][]string{{"Jo"}, {"Jones"}, {"J"}} {
		k, _ := EncodeTuple(tup...)
		if strings.HasPrefix(k, p) {
			t.Errorf("%q starts with %q", k, p)
		}
	}
}
