package table

import (
	"errors"
	"fmt"
)

// pageEntities returns a query page's entities as the service's JSON:
// sub-slices of the raw page the wire path kept (the SDK's pager then got
// an empty page and did no work), or, off the wire path, the
// ones the SDK decoded and marshalled again.
func pageEntities(x *wireExchange, sdk [][]byte) ([][]byte, error) {
	if !x.Invoked || x.Response == nil {
		return sdk, nil
	}
	out, err := splitPage(x.Response)
	if err != nil {
		return nil, fmt.Errorf("table: reading a query page: %w", err)
	}
	return out, nil
}

var errBadPage = errors.New("malformed query page")

// splitPage finds the elements of the top-level "value" array of a page
// ({"odata.metadata":…,"value":[{…},…]}) in one pass, without copying:
// each element is checked in full when the codec decodes it, so this only
// tracks strings and nesting to find where each one ends.
func splitPage(b []byte) ([][]byte, error) {
	i := ws(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errBadPage
	}
	i = ws(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, nil
	}
	var out [][]byte
	for i < len(b) {
		if b[i] != '"' {
			return nil, errBadPage
		}
		end, err := skipString(b, i)
		if err != nil {
			return nil, err
		}
		key := b[i+1 : end-1]
		i = ws(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, errBadPage
		}
		i = ws(b, i+1)
		if string(key) == "value" && i < len(b) && b[i] == '[' {
			i = ws(b, i+1)
			for i < len(b) && b[i] != ']' {
				start := i
				if i, err = skipValue(b, i); err != nil {
					return nil, err
				}
				out = append(out, b[start:i])
				i = ws(b, i)
				if i < len(b) && b[i] == ',' {
					i = ws(b, i+1)
				} else if i >= len(b) || b[i] != ']' {
					return nil, errBadPage
				}
			}
			if i >= len(b) {
				return nil, errBadPage
			}
			i++
		} else if i, err = skipValue(b, i); err != nil {
			return nil, err
		}
		i = ws(b, i)
		if i < len(b) && b[i] == ',' {
			i = ws(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return out, nil
		}
		return nil, errBadPage
	}
	return nil, errBadPage
}

func ws(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errBadPage
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errBadPage
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errBadPage
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\r' && b[j] != '\t' {
		j++
	}
	if j == i {
		return 0, errBadPage
	}
	return j, nil
}
