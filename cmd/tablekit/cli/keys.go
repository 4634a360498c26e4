package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/keys"
)

// keyKind is one of package keys' encodings, both ways.
type keyKind struct {
	name   string
	decode func(key string) (string, error)
	encode func(args []string) (string, error) // nil: decode only
}

func keyKinds() []keyKind {
	timeText := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	one := func(args []string) (string, error) {
		if len(args) != 1 {
			return "", usagef("want one value, got %d", len(args))
		}
		return args[0], nil
	}
	parseTime := func(args []string) (time.Time, error) {
		s, err := one(args)
		if err != nil {
			return time.Time{}, err
		}
		if s == "now" {
			return time.Now(), nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, usagef("want an RFC 3339 time such as 2026-11-23T10:00:00Z, or now: %v", err)
		}
		return t, keyrules.CheckTicksRange(t)
	}
	parseInt := func(args []string) (int64, error) {
		s, err := one(args)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, usagef("want a whole number: %v", err)
		}
		return n, nil
	}
	parseUint := func(args []string) (uint64, error) {
		s, err := one(args)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, usagef("want a whole number from 0: %v", err)
		}
		return n, nil
	}
	return []keyKind{
		{name: "inverted-ticks",
			decode: func(k string) (string, error) { t, err := keys.ParseInvertedTicks(k); return timeText(t), err },
			encode: func(a []string) (string, error) { t, err := parseTime(a); return keys.InvertedTicks(t), err }},
		{name: "log-key", // inverted ticks followed by a suffix that keeps equal instants apart
			decode: func(k string) (string, error) {
				if len(k) <= keyrules.TicksWidth {
					return "", fmt.Errorf("no suffix")
				}
				t, err := keys.ParseInvertedTicks(k[:keyrules.TicksWidth])
				return timeText(t) + " suffix " + strconv.Quote(k[keyrules.TicksWidth:]), err
			}},
		{name: "ticks",
			decode: func(k string) (string, error) { t, err := keys.ParseTicks(k); return timeText(t), err },
			encode: func(a []string) (string, error) { t, err := parseTime(a); return keys.Ticks(t), err }},
		{name: "int64",
			decode: func(k string) (string, error) { n, err := keys.ParseInt64(k); return strconv.FormatInt(n, 10), err },
			encode: func(a []string) (string, error) { n, err := parseInt(a); return keys.Int64(n), err }},
		{name: "desc-int64",
			decode: func(k string) (string, error) {
				n, err := keyrules.ParseDescInt64(k)
				return strconv.FormatInt(n, 10), err
			},
			encode: func(a []string) (string, error) { n, err := parseInt(a); return keyrules.DescInt64(n), err }},
		{name: "uint64",
			decode: func(k string) (string, error) {
				n, err := keyrules.ParseUint64(k)
				return strconv.FormatUint(n, 10), err
			},
			encode: func(a []string) (string, error) { n, err := parseUint(a); return keyrules.Uint64(n), err }},
		{name: "desc-uint64",
			decode: func(k string) (string, error) {
				n, err := keyrules.ParseDescUint64(k)
				return strconv.FormatUint(n, 10), err
			},
			encode: func(a []string) (string, error) { n, err := parseUint(a); return keyrules.DescUint64(n), err }},
		{name: "tuple",
			decode: func(k string) (string, error) {
				parts, err := keys.DecodeTuple(k)
				b, _ := json.Marshal(parts)
				return string(b), err
			},
			encode: func(a []string) (string, error) { return keys.EncodeTuple(a...) }},
		{name: "compound",
			decode: func(k string) (string, error) {
				parts := keys.Compound{}.Split(k)
				if len(parts) < 2 {
					return "", fmt.Errorf("no separator")
				}
				b, _ := json.Marshal(parts)
				return string(b), nil
			},
			encode: func(a []string) (string, error) { return keys.Compound{}.Join(a...) }},
	}
}

func kindNames(encodable bool) []string {
	var names []string
	for _, k := range keyKinds() {
		if !encodable || k.encode != nil {
			names = append(names, k.name)
		}
	}
	return names
}

func kindNamed(name string) (keyKind, bool) {
	for _, k := range keyKinds() {
		if k.name == name {
			return k, true
		}
	}
	return keyKind{}, false
}

// decoded is one key's readings: by kind, every reading that parses.
type decoded struct {
	Key string            `json:"key"`
	As  map[string]string `json:"as"`
}

func keysCommands() []command {
	return []command{
		{
			name:      "keys decode",
			noAccount: true,
			summary:   "read keys built by package keys: inverted ticks and log keys as times, tuples, padded numbers",
			usage: `KEY...

With -as auto (the default) every reading that parses is shown: a key of
19 digits is both ticks and inverted ticks, and only you know which.

-json: {"keys": [{"key": KEY, "as": {KIND: READING, ...}}, ...]}.
Exit 1 when a key reads as none of the kinds asked for.

examples:
  tablekit keys decode 2519880551999999999
  tablekit keys decode -as tuple 'Sales!000123!'
  tablekit keys decode -json -as desc-int64 -- -9223372036854775685`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				as := fs.String("as", "auto", "how to read the keys: auto, "+strings.Join(kindNames(false), ", "))
				return func(_ context.Context, c *cli, args []string) error {
					if len(args) == 0 {
						return usagef("no key given")
					}
					var kinds []keyKind
					if *as == "auto" {
						kinds = keyKinds()
					} else if k, ok := kindNamed(*as); ok {
						kinds = []keyKind{k}
					} else {
						return usagef("unknown -as %q", *as)
					}
					var out []decoded
					unreadable := false
					for _, key := range args {
						d := decoded{Key: key, As: map[string]string{}}
						for _, k := range kinds {
							if v, err := k.decode(key); err == nil {
								d.As[k.name] = v
							}
						}
						unreadable = unreadable || len(d.As) == 0
						out = append(out, d)
					}
					c.emit(map[string]any{"keys": out}, func(w io.Writer) {
						for _, d := range out {
							if len(d.As) == 0 {
								fmt.Fprintf(w, "%s\tnot a key of any kind asked for\n", d.Key)
								continue
							}
							names := make([]string, 0, len(d.As))
							for n := range d.As {
								names = append(names, n)
							}
							slices.Sort(names)
							for _, n := range names {
								fmt.Fprintf(w, "%s\t%s\t%s\n", d.Key, n, d.As[n])
							}
						}
					})
					if unreadable {
						return errQuietFailure // the output says which key
					}
					return nil
				}
			},
		},
		{
			name:      "keys encode",
			noAccount: true,
			summary:   "build a key as package keys does: times as (inverted) ticks, tuples, padded numbers",
			usage: `VALUE...

Times are RFC 3339 (2026-11-23T10:00:00Z) or now; tuple and compound take
their components as separate arguments. Put -- before a value that
starts with a minus sign.

-json: {"key": KEY, "as": KIND}.

examples:
  tablekit keys encode -as inverted-ticks 2026-11-23T10:00:00Z
  tablekit keys encode -as tuple Sales 000123
  tablekit keys encode -as desc-int64 122
  tablekit keys encode -as int64 -- -42`,
			flags: func(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
				as := fs.String("as", "", "the encoding (required): "+strings.Join(kindNames(true), ", "))
				return func(_ context.Context, c *cli, args []string) error {
					k, ok := kindNamed(*as)
					if !ok || k.encode == nil {
						return usagef("-as must be one of %s", strings.Join(kindNames(true), ", "))
					}
					if len(args) == 0 {
						return usagef("no value given")
					}
					key, err := k.encode(args)
					if err != nil {
						return err
					}
					c.emit(map[string]string{"key": key, "as": k.name}, func(w io.Writer) { fmt.Fprintln(w, key) })
					return nil
				}
			},
		},
	}
}
