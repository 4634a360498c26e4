// Package jsonlines holds the stored format of BlobLog blobs, one JSON
// object per line ({"t":<RFC 3339 time>,"m":<text>}), so that patterns
// never imports encoding/json: the pattern hands it times and texts, and
// the format lives, and is tested byte for byte, here.
package jsonlines

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// line is one stored line. The tags are the stored format: changing them
// makes the blobs already written unreadable.
type line struct {
	Time time.Time `json:"t"`
	Text string    `json:"m"`
}

// Append appends the line of one entry, newline included, exactly as the
// json.Encoder of earlier versions wrote it (HTML-safe escaping, times in
// RFC 3339 with nanoseconds). A time outside years 0..9999 is an error.
func Append(b []byte, t time.Time, text string) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	if err := json.NewEncoder(buf).Encode(line{Time: t, Text: text}); err != nil {
		return b, fmt.Errorf("jsonlines: %w", err)
	}
	return buf.Bytes(), nil
}

// Parse reads one line (without its newline).
func Parse(b []byte) (time.Time, string, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return time.Time{}, "", fmt.Errorf("jsonlines: %w", err)
	}
	return l.Time, l.Text, nil
}
