package keyrules

import (
	"strings"
	"time"
)

// Period is the span one table covers in the high-volume delete pattern.
type Period int

// The periods a table can cover.
const (
	Hourly Period = iota + 1
	Daily
	Monthly
)

func (p Period) layout() string {
	switch p {
	case Hourly:
		return "2006010215"
	case Daily:
		return "20060102"
	case Monthly:
		return "200601"
	}
	return ""
}

// Start is the UTC start of the period that contains t.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	switch p {
	case Hourly:
		return t.Truncate(time.Hour)
	case Daily:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Monthly:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return t
}

// Next is the start of the period after the one that contains t.
func (p Period) Next(t time.Time) time.Time {
	s := p.Start(t)
	switch p {
	case Hourly:
		return s.Add(time.Hour)
	case Daily:
		return s.AddDate(0, 0, 1)
	case Monthly:
		return s.AddDate(0, 1, 0)
	}
	return s
}

// String names the period: hourly, daily or monthly.
func (p Period) String() string {
	switch p {
	case Hourly:
		return "hourly"
	case Daily:
		return "daily"
	case Monthly:
		return "monthly"
	}
	return "Period(" + itoa(int(p)) + ")"
}

// maxGeneration keeps the generation suffix at three digits.
const maxGeneration = 999

// PeriodTable names the table that holds period p's data at t: prefix, then
// the UTC period start as digits (yyyyMM, yyyyMMdd or yyyyMMddHH), then, for
// generation g > 0, "g" and three digits. Names of one prefix and period sort
// by time and then generation. A deleted table's name stays unusable for a
// while (409 TableBeingDeleted), so a period's table that must be recreated
// takes the next generation instead of its old name.
func PeriodTable(prefix string, p Period, t time.Time, generation int) (string, error) {
	if p.layout() == "" {
		return "", invalid("table name", prefix, ErrOutOfRange, "unknown period "+p.String())
	}
	if generation < 0 || generation > maxGeneration {
		return "", invalid("table name", prefix, ErrOutOfRange, "generation is 0 to 999")
	}
	if y := t.UTC().Year(); y < 1000 || y > 9999 {
		return "", invalid("table name", prefix, ErrOutOfRange, "period tables hold years 1000 to 9999")
	}
	name := prefix + p.Start(t).Format(p.layout())
	if generation > 0 {
		name += "g" + padUint(uint64(generation), 3)
	}
	if err := ValidateTableName(name); err != nil {
		return "", err
	}
	return name, nil
}

// ParsePeriodTable inverts PeriodTable; it fails for names that PeriodTable
// would not make for this prefix and period.
func ParsePeriodTable(prefix string, p Period, name string) (start time.Time, generation int, err error) {
	rest, ok := strings.CutPrefix(name, prefix)
	l := p.layout()
	if !ok || l == "" || len(rest) < len(l) {
		return time.Time{}, 0, invalid("table name", name, ErrBadSyntax, "not a "+p.String()+" table of "+prefix)
	}
	start, err = time.ParseInLocation(l, rest[:len(l)], time.UTC)
	if err != nil || start.Format(l) != rest[:len(l)] {
		return time.Time{}, 0, invalid("table name", name, ErrBadSyntax, "not a "+p.String()+" table of "+prefix)
	}
	if g := rest[len(l):]; g != "" {
		if len(g) != 4 || g[0] != 'g' {
			return time.Time{}, 0, invalid("table name", name, ErrBadSyntax, "generation suffix is g and three digits")
		}
		u, err := parseDigits("generation", g[1:], 3)
		if err != nil || u == 0 {
			return time.Time{}, 0, invalid("table name", name, ErrBadSyntax, "generation suffix is g001 to g999")
		}
		generation = int(u)
	}
	return start, generation, nil
}
