package batch

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// errPolicySkipped: the client answered wirepolicy.HasPath, but its policy
// did not see the transaction (a policy before it answered instead); the
// SDK then sent the placeholder operation (a delete guarded by an ETag no
// entity has, which changes nothing), not the transaction.
var errPolicySkipped = errors.New("batch: the client's tablekit policy did not see the transaction; nothing was written")

// wirePaths remembers, per client, whether its pipeline has tablekit's
// policy (wirepolicy.HasPath), so that transactions planned together, or
// written by one Writer, probe a client once.
type wirePaths struct{ m sync.Map }

// has answers from memory, or asks wirepolicy.HasPath once (on a client
// without the policy a ledger counts that probe as one try, so known and
// learn serve the transactions that need no probe).
func (w *wirePaths) has(client table.Client) bool {
	if has, ok := w.known(client); ok {
		return has
	}
	has := wirepolicy.HasPath(client)
	w.learn(client, has)
	return has
}

// known is the remembered answer for client, if any.
func (w *wirePaths) known(client table.Client) (has, ok bool) {
	if !reflect.TypeOf(client).Comparable() {
		return false, false // cannot be a map key
	}
	v, ok := w.m.Load(client)
	if !ok {
		return false, false
	}
	return v.(bool), true
}

// learn remembers what a request through client showed.
func (w *wirePaths) learn(client table.Client, has bool) {
	if reflect.TypeOf(client).Comparable() {
		w.m.Store(client, has)
	}
}

// encodeOp encodes op for either path: an update or upsert whose keys
// hold a quote, which the SDK's path cannot send, is encoded for
// tablekit's own $batch body, and refused at Submit on a client without
// the policy (quotedUpdate).
func encodeOp(op Op) (*encoded, error) {
	e, err := op.encode()
	if errors.Is(err, ErrQuoteInKey) {
		e, err = encodeQuoted(op)
		if e != nil {
			e.quoted = true
		}
	}
	return e, err
}

// quotedUpdate is the index of the first operation only tablekit's own
// $batch body can send, or -1.
func (tx *Transaction) quotedUpdate() int {
	for i, e := range tx.ops {
		if e.quoted {
			return i
		}
	}
	return -1
}

// The multipart boundaries of tablekit's own $batch bodies. Fixed strings
// are safe: a boundary must not occur at the start of a line inside the
// parts, and every part is headers tablekit writes plus one line of JSON
// (encoding/json and the codec escape CR and LF inside strings).
const (
	wireBatchBoundary     = "batch_tablekit_f4e1c2a9"
	wireChangesetBoundary = "changeset_tablekit_f4e1c2a9"
)

// neverETag guards the placeholder: an ETag older than any entity, so
// that if the placeholder ever reaches the service (the client has no
// tablekit's policy) it is refused with 412 or 404 and writes nothing.
const neverETag = azcore.ETag(`W/"datetime'1601-01-01T00%3A00%3A00.0000000Z'"`)

// placeholder is the action list handed to SubmitTransaction when
// tablekit's policy replaces the body: one cheap operation whose request line
// tells the policy the table's URL.
func (tx *Transaction) placeholder() []aztables.TransactionAction {
	tag := neverETag
	e := tx.ops[0]
	return []aztables.TransactionAction{{ActionType: aztables.TransactionTypeDelete, Entity: deleteKeysJSON(e.pk, e.rk), IfMatch: &tag}}
}

// wireBody writes the whole $batch request in one buffer: each operation's
// keys go into its URL as OData literals (quotes doubled, then
// path-escaped) and into its body as they are, which is what the service
// checks them against.
func (tx *Transaction) wireBody(tableURL string) ([]byte, string) {
	var b bytes.Buffer
	b.Grow(tx.size)
	b.WriteString("--" + wireBatchBoundary + "\r\nContent-Type: multipart/mixed; boundary=" + wireChangesetBoundary + "\r\n\r\n")
	cosmos := isCosmos(tableURL)
	for _, e := range tx.ops {
		b.WriteString("--" + wireChangesetBoundary + "\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n")
		method, keyed := "POST", false
		switch e.op.Kind {
		case KindUpsertMerge, KindUpdateMerge:
			// PATCH, as the SDK sends a merge; the Cosmos DB Table API
			// takes it as a POST that names MERGE (the SDK's
			// transformPatchToCosmosPost).
			method, keyed = "PATCH", true
			if cosmos {
				method = "POST"
			}
		case KindUpsertReplace, KindUpdateReplace:
			method, keyed = "PUT", true
		case KindDelete:
			method, keyed = "DELETE", true
		}
		b.WriteString(method)
		b.WriteByte(' ')
		b.WriteString(tableURL)
		if keyed {
			b.WriteString("(PartitionKey='")
			b.WriteString(url.PathEscape(strings.ReplaceAll(e.pk, "'", "''")))
			b.WriteString("',RowKey='")
			b.WriteString(url.PathEscape(strings.ReplaceAll(e.rk, "'", "''")))
			b.WriteString("')")
		}
		b.WriteString(" HTTP/1.1\r\nAccept: application/json;odata=minimalmetadata\r\nDataServiceVersion: 3.0\r\n")
		if method == "POST" && keyed {
			b.WriteString("X-HTTP-Method: MERGE\r\n")
		}
		ifMatch := e.ifMatch
		if e.op.Kind == KindDelete && ifMatch == "" {
			ifMatch = azcore.ETagAny
		}
		if ifMatch != "" {
			b.WriteString("If-Match: ")
			b.WriteString(string(ifMatch))
			b.WriteString("\r\n")
		}
		if e.op.Kind == KindDelete {
			b.WriteString("\r\n\r\n")
			continue
		}
		if e.op.Kind == KindAdd {
			b.WriteString("Prefer: return-no-content\r\n")
		}
		b.WriteString("Content-Type: application/json\r\nContent-Length: ")
		b.WriteString(strconv.Itoa(len(e.body)))
		b.WriteString("\r\n\r\n")
		b.Write(e.body)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + wireChangesetBoundary + "--\r\n--" + wireBatchBoundary + "--\r\n")
	return b.Bytes(), "multipart/mixed; boundary=" + wireBatchBoundary
}

// submitWire sends tx as tablekit's own $batch body through the client's
// tablekit policy.
func (tx *Transaction) submitWire(ctx context.Context, client table.Client) (*Result, error) {
	x := &wirepolicy.Exchange{Body: tx.wireBody}
	_, err := client.SubmitTransaction(wirepolicy.With(ctx, x), tx.placeholder(), nil)
	if !x.Invoked {
		if err == nil {
			err = errPolicySkipped
		} else {
			err = errors.Join(errPolicySkipped, err)
		}
		return nil, &OpError{Index: 0, Kind: tx.ops[0].op.Kind, PartitionKey: tx.ops[0].pk, RowKey: tx.ops[0].rk, Err: err}
	}
	if err != nil {
		return nil, tx.failure(err)
	}
	res := &Result{ETags: make([]azcore.ETag, len(tx.ops))}
	if parts, perr := parseMultipart(x.Response); perr == nil && len(parts) == len(tx.ops) {
		for i, p := range parts {
			res.ETags[i] = azcore.ETag(p.etag)
		}
	}
	return res, nil
}

// encodeQuoted encodes an update or upsert whose keys hold a quote, which
// op.encode refuses because the SDK cannot send it (see ErrQuoteInKey)
// but tablekit's own body can. Encoding it as an Add runs every check of
// encode on the same value (Add differs from an update only in the quote
// rule and the If-Match default, both applied here after).
func encodeQuoted(op Op) (*encoded, error) {
	// The operation's own condition is checked as its kind checks it; the
	// encode as an Add, which takes none, only checks the entity.
	switch {
	case op.explicit && (op.Kind == KindUpsertMerge || op.Kind == KindUpsertReplace):
		return nil, &table.InputError{Op: op.Kind.String(), Field: "IfMatch", Rule: table.ErrInvalidValue,
			Detail: "an add or upsert takes no If-Match; use an update to require a version"}
	case op.explicit && op.ifMatch == "":
		return nil, &table.InputError{Op: op.Kind.String(), Field: "IfMatch", Rule: table.ErrNoETag,
			Detail: "empty ETag; azcore.ETagAny means any version"}
	}
	asAdd := op
	asAdd.Kind = KindAdd
	asAdd.explicit = false
	// An explicit If-Match replaces the value's ETag, so the Add encode
	// must not ask the value for one.
	asAdd.useETag = op.useETag && !op.explicit
	e, err := asAdd.encode()
	if err != nil {
		return nil, err
	}
	if op.explicit {
		e.ifMatch = op.ifMatch
	}
	e.op = op
	if e.ifMatch == "" && (op.Kind == KindUpdateMerge || op.Kind == KindUpdateReplace) {
		e.ifMatch = azcore.ETagAny
	}
	e.size = opSize(e)
	return e, nil
}

// isCosmos is aztables' isCosmosEndpoint (v1.4.1, service_client.go): the
// Cosmos DB Table API, or its emulator.
func isCosmos(u string) bool {
	return strings.Contains(u, "localhost") && strings.Contains(u, "8902") ||
		strings.Contains(u, ".table.cosmos.") || strings.Contains(u, ".table.cosmosdb.")
}
