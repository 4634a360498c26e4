package integration

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/tablekit/tablekit/internal/tuple"
	"github.com/tablekit/tablekit/keys"
)

// listID is the ID a model's list holds for the primary (pk, rk): the
// tuple of its keys.
func listID(pk, rk string) string { return tuple.Encode(pk, rk) }

// crossCopyRowKey is the RowKey of the copy of value that the primary
// (pk, rk) has in a model's CrossCopies index: the tuple of the value and
// the first 12 bytes of the SHA-256 of the primary's ID, in hex.
func crossCopyRowKey(value, pk, rk string) (string, error) {
	sum := sha256.Sum256([]byte(listID(pk, rk)))
	return keys.EncodeTuple(value, hex.EncodeToString(sum[:12]))
}
