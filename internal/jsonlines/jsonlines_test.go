package jsonlines

import (
	"testing"
	"time"
)

// TestTodaysFormat pins the bytes: a blob written before the format moved
// here reads back, and the same entries encode to the same bytes.
func TestTodaysFormat(t *testing.T) {
	// Written by patterns.BlobLog's json.Encoder before this package existed.
	const stored = `{"t":"2014-07-31T18:00:00.123456789Z","m":"GET /a?b=1&c=<2> \"q\"\n\t\u2028é"}` + "\n" +
		`{"t":"2014-07-31T18:59:59Z","m":""}` + "\n"
	t1 := time.Date(2014, 7, 31, 18, 0, 0, 123456789, time.UTC)
	t2 := time.Date(2014, 7, 31, 18, 59, 59, 0, time.UTC)
	text1 := "GET /a?b=1&c=<2> \"q\"\n\t\u2028é"
	b, err := Append(nil, t1, text1)
	if err != nil {
		t.Fatal(err)
	}
	b, err = Append(b, t2, "")
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"t":"2014-07-31T18:00:00.123456789Z","m":"GET /a?b=1\u0026c=\u003c2\u003e \"q\"\n\t\u2028é"}`+"\n"+`{"t":"2014-07-31T18:59:59Z","m":""}`+"\n" {
		t.Fatalf("bytes changed:\n%s", b)
	}
	for i, want := range []struct {
		t    time.Time
		text string
	}{{t1, text1}, {t2, ""}} {
		lines := [][]byte{b[:len(b)-len(`{"t":"2014-07-31T18:59:59Z","m":""}`)-2], []byte(`{"t":"2014-07-31T18:59:59Z","m":""}`)}
		gt, gm, err := Parse(lines[i])
		if err != nil || !gt.Equal(want.t) || gm != want.text {
			t.Fatalf("line %d: %v %q %v", i, gt, gm, err)
		}
	}
	// The unescaped spelling of the same text, as a hand-made or older
	// blob may hold it, reads the same.
	first := stored[:len(stored)-len(`{"t":"2014-07-31T18:59:59Z","m":""}`)-2]
	if gt, gm, err := Parse([]byte(first)); err != nil || !gt.Equal(t1) || gm != text1 {
		t.Fatalf("stored line: %v %q %v", gt, gm, err)
	}
}

func TestAppendRefusesOutOfRangeTime(t *testing.T) {
	b, err := Append([]byte("x"), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "m")
	if err == nil || string(b) != "x" {
		t.Fatalf("%q %v", b, err)
	}
}
