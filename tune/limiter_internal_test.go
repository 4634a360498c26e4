package tune

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// A page's entities are counted however the body arrives: names split
// across reads of any size count once.
func TestPageCounterCountsAcrossReadBoundaries(t *testing.T) {
	page := `{"odata.metadata":"x","value":[` + strings.Repeat(`{"odata.etag":"W/\"1\"","PartitionKey":"p"},`, 37) + `{"odata.etag":"W/\"2\""}]}`
	for _, size := range []int{1, 2, 5, 11, 12, 13, 64, 4096} {
		var got []int
		p := &pageCounter{body: io.NopCloser(&chunked{s: page, size: size}), charge: func(n int) { got = append(got, n) }}
		if _, err := io.ReadAll(p); err != nil {
			t.Fatal(err)
		}
		_ = p.Close()
		if len(got) != 1 || got[0] != 38 {
			t.Errorf("reads of %d bytes: charged %v, want [38] once", size, got)
		}
	}
	var got []int
	p := &pageCounter{body: io.NopCloser(iotest.OneByteReader(strings.NewReader(page))), charge: func(n int) { got = append(got, n) }}
	_, _ = io.ReadAll(p)
	if len(got) != 1 || got[0] != 38 {
		t.Errorf("one-byte reader: charged %v, want [38]", got)
	}
}

type chunked struct {
	s    string
	size int
}

func (c *chunked) Read(b []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.size)], c.s)
	c.s = c.s[n:]
	return n, nil
}
