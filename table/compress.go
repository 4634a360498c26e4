package table

import (
	"errors"

	"github.com/tablekit/tablekit/internal/gz"
)

// ErrInflatedTooLarge: compressed data (a binary property tagged gzip, a
// LargeEntity or BlobLog blob) inflates past the bound its reader allows,
// as a decompression bomb would. Nothing is returned of it.
var ErrInflatedTooLarge = gz.ErrTooLarge

// maxGzipPropertyBytes bounds a binary property tagged gzip before
// compression, and so what a stored one may inflate to when read: the
// entity limit, MaxEntityBytes (1 MiB), the most a value could hold if
// stored plain in an entity of its own. The compressed form must still fit
// MaxBinaryBytes.
const maxGzipPropertyBytes = MaxEntityBytes

// A []byte field tagged `table:"Name,gzip"` is stored gzip-compressed
// (RFC 1952), in the same Edm.Binary property: the stored bytes describe
// themselves (gzip's magic 1f 8b 08), so any reader, in any language,
// tells them apart and inflates them with its standard library; there is
// no companion property to keep in step. A value that compression would
// not shrink is stored plain, unless it starts with the gzip magic itself
// (already compressed data): that one is always wrapped, so that reading
// never mistakes plain data for a stream. Reads accept both forms, so the
// tag can be added to a field that already holds plain values. One case
// cannot be told apart: a plain value written before the tag was added
// that is itself a complete gzip stream reads back inflated. Filters
// compare the stored (compressed) bytes, so do not filter on such a field.

// gzipProp is the stored form of a gzip-tagged value.
func gzipProp(typ, name string, raw []byte) ([]byte, error) {
	if len(raw) > maxGzipPropertyBytes {
		return nil, inputErr("encode", typ, name, ErrBinaryTooLong, "%d bytes before compression, at most %d (MaxEntityBytes)", len(raw), maxGzipPropertyBytes)
	}
	if len(raw) == 0 {
		return raw, nil
	}
	z := gz.Compress(raw)
	if len(z) >= len(raw) && !gz.IsGzip(raw) {
		return raw, nil
	}
	return z, nil
}

// gunzipProp is the value of a stored gzip-tagged property: inflated if
// it is a gzip stream, as it is otherwise (a value stored before the tag,
// or one compression did not shrink).
func gunzipProp(stored []byte) ([]byte, error) {
	if !gz.IsGzip(stored) {
		return stored, nil
	}
	out, err := gz.Decompress(stored, maxGzipPropertyBytes)
	switch {
	case errors.Is(err, gz.ErrTooLarge):
		return nil, err
	case err != nil:
		// Not a whole gzip stream, so not written by the tag: a plain
		// value that happens to start with the magic.
		return stored, nil
	}
	return out, nil
}

// decodeRule is the rule of a field's decoding error: a bomb is told
// from a malformed value.
func decodeRule(err error) error {
	if errors.Is(err, gz.ErrTooLarge) {
		return ErrInflatedTooLarge
	}
	return ErrInvalidValue
}
