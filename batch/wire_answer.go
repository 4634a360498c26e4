package batch

import (
	"bytes"
	"errors"
	"strconv"
)

var errBadAnswer = errors.New("batch: malformed multipart answer")

// part is one operation's response in a $batch answer. Its byte slices
// point into the answer: nothing is copied.
type part struct {
	status    int
	etag      string
	contentID string
	errorCode string
	body      []byte
}

// parseMultipart reads the service's $batch answer in one pass, with no
// regular expressions and no copies: a batch part holding a changeset of
// HTTP responses, or (a whole-batch error some services send) one HTTP
// response directly in the batch part.
func parseMultipart(b []byte) ([]part, error) {
	outer, rest, ok := boundaryLine(b)
	if !ok {
		return nil, errBadAnswer
	}
	hdr, rest, ok := headerBlock(rest)
	if !ok {
		return nil, errBadAnswer
	}
	inner := headerParam(hdr, "boundary=")
	if inner == nil {
		// No changeset: one response, up to the batch's closing line.
		if end := bytes.Index(rest, append([]byte("\r\n--"), outer...)); end >= 0 {
			rest = rest[:end]
		}
		p, err := readResponse(rest)
		if err != nil {
			return nil, err
		}
		return []part{p}, nil
	}
	delim := append(append([]byte("--"), inner...), '\r', '\n')
	closing := append(append([]byte("--"), inner...), '-', '-')
	var out []part
	for {
		i := bytes.Index(rest, []byte("--"))
		if i < 0 || bytes.HasPrefix(rest[i:], closing) {
			return out, nil
		}
		if !bytes.HasPrefix(rest[i:], delim) {
			// A line of some other content between parts: skip it.
			rest = rest[i+2:]
			continue
		}
		rest = rest[i+len(delim):]
		end := bytes.Index(rest, append([]byte("\r\n--"), inner...))
		if end < 0 {
			return nil, errBadAnswer
		}
		seg := rest[:end]
		rest = rest[end+2:]
		_, seg, ok := headerBlock(seg) // the part's own headers
		if !ok {
			return nil, errBadAnswer
		}
		p, err := readResponse(seg)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
}

// boundaryLine reads "--boundary" from the first line of b.
func boundaryLine(b []byte) (boundary, rest []byte, ok bool) {
	line, rest, ok := bytes.Cut(b, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !ok || !bytes.HasPrefix(line, []byte("--")) {
		return nil, nil, false
	}
	return line[2:], rest, true
}

// headerBlock splits b at the first empty line.
func headerBlock(b []byte) (hdr, rest []byte, ok bool) {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return b[:i+2], b[i+4:], true
	}
	if bytes.HasPrefix(b, []byte("\r\n")) {
		return nil, b[2:], true
	}
	return nil, nil, false
}

// headerParam finds param (as "boundary=") in a header block and returns
// its value, up to the end of its line or a ';'.
func headerParam(hdr []byte, param string) []byte {
	i := bytes.Index(hdr, []byte(param))
	if i < 0 {
		return nil
	}
	v := hdr[i+len(param):]
	if j := bytes.IndexAny(v, ";\r\n"); j >= 0 {
		v = v[:j]
	}
	return bytes.Trim(v, `"`)
}

// readResponse reads an HTTP response: status line, headers, body.
func readResponse(b []byte) (part, error) {
	var p part
	line, rest, _ := bytes.Cut(b, []byte("\r\n"))
	_, code, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(code) < 3 {
		return p, errBadAnswer
	}
	n, err := strconv.Atoi(string(code[:3]))
	if err != nil {
		return p, errBadAnswer
	}
	p.status = n
	for {
		var h []byte
		h, rest, ok = bytes.Cut(rest, []byte("\r\n"))
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "ETag"):
			p.etag = string(value)
		case asciiEqualFold(name, "Content-ID"):
			p.contentID = string(value)
		case asciiEqualFold(name, "X-Ms-Error-Code"):
			p.errorCode = string(value)
		}
		if !ok {
			break
		}
	}
	p.body = bytes.TrimRight(rest, "\r\n")
	return p, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
