// Package reqclass names a storage request from its method and URL alone:
// its operation, resource and, for a table request that names one in the
// URL, partition. package ledger counts requests under these names and
// tune.Limiter paces table requests by them; both must name a request the
// same way, so the mechanism lives once, here.
package reqclass

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Service is the storage service a request goes to; its values are
// ledger.Service's.
type Service string

// The services a request is classified for.
const (
	Table Service = "table"
	Queue Service = "queue"
	Blob  Service = "blob"
)

// Request is what a request is named by.
type Request struct {
	Operation string // GetEntity, QueryEntities, Batch, DequeueMessages, PutBlob, …; the HTTP method when unrecognised
	Resource  string // the table, queue or container
	Partition string // the PartitionKey, for table requests that name one
}

var keysInPath = regexp.MustCompile(`^([^(]*)\(PartitionKey='((?:[^']|'')*)',RowKey='`)

// Classify names r, a request to service s. It reads only the method,
// path and query, never a header or the body, so it keeps no secret.
func Classify(s Service, r *http.Request) Request {
	k := Request{Operation: r.Method}
	segs := segments(r.URL)
	q := r.URL.Query()
	switch s {
	case Table:
		if len(segs) == 0 {
			return k
		}
		first, _ := url.PathUnescape(segs[0])
		switch {
		case first == "$batch":
			k.Operation = "Batch"
		case first == "Tables" && r.Method == http.MethodPost:
			k.Operation = "CreateTable"
		case first == "Tables" && r.Method == http.MethodGet:
			k.Operation = "QueryTables"
		case strings.HasPrefix(first, "Tables("):
			k.Operation, k.Resource = "DeleteTable", strings.Trim(strings.TrimPrefix(first, "Tables("), "')")
		case strings.HasSuffix(first, "()"):
			k.Operation, k.Resource = "QueryEntities", strings.TrimSuffix(first, "()")
			if f := q.Get("$filter"); strings.HasPrefix(f, "PartitionKey eq '") || strings.HasPrefix(f, "(PartitionKey eq '") {
				rest := f[strings.Index(f, "'")+1:]
				if end := strings.Index(rest, "'"); end >= 0 {
					k.Partition = rest[:end]
				}
			}
		case keysInPath.MatchString(first):
			m := keysInPath.FindStringSubmatch(first)
			k.Resource, k.Partition = m[1], strings.ReplaceAll(m[2], "''", "'")
			k.Operation = map[string]string{http.MethodGet: "GetEntity", http.MethodPut: "UpdateEntity", http.MethodPatch: "MergeEntity", http.MethodDelete: "DeleteEntity"}[r.Method]
		case r.Method == http.MethodPost:
			k.Operation, k.Resource = "InsertEntity", first
		}
	case Queue:
		if len(segs) > 0 {
			k.Resource = segs[0]
		}
		switch {
		case len(segs) == 1 && r.Method == http.MethodPut:
			k.Operation = "CreateQueue"
		case len(segs) == 1 && r.Method == http.MethodDelete:
			k.Operation = "DeleteQueue"
		case len(segs) == 1:
			k.Operation = "GetQueueProperties"
		case len(segs) == 2 && r.Method == http.MethodPost:
			k.Operation = "EnqueueMessage"
		case len(segs) == 2 && r.Method == http.MethodGet && q.Get("peekonly") == "true":
			k.Operation = "PeekMessages"
		case len(segs) == 2 && r.Method == http.MethodGet:
			k.Operation = "DequeueMessages"
		case len(segs) == 2:
			k.Operation = "ClearMessages"
		case r.Method == http.MethodPut:
			k.Operation = "UpdateMessage"
		default:
			k.Operation = "DeleteMessage"
		}
	case Blob:
		if len(segs) > 0 {
			k.Resource = segs[0]
		}
		switch {
		case len(segs) == 1 && q.Get("comp") == "list":
			k.Operation = "ListBlobs"
		case len(segs) == 1 && r.Method == http.MethodPut:
			k.Operation = "CreateContainer"
		case len(segs) == 1 && r.Method == http.MethodDelete:
			k.Operation = "DeleteContainer"
		case r.Method == http.MethodPut:
			k.Operation = "PutBlob"
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			k.Operation = "GetBlob"
		case r.Method == http.MethodDelete:
			k.Operation = "DeleteBlob"
		}
	}
	return k
}

// segments returns the path segments after the account name, which
// emulators put first in the path (http://127.0.0.1:10002/devstoreaccount1/…).
func segments(u *url.URL) []string {
	p := strings.Trim(u.Path, "/")
	segs := strings.Split(p, "/")
	host := u.Hostname()
	if host == "localhost" || (len(host) > 0 && host[0] >= '0' && host[0] <= '9') {
		if len(segs) > 0 {
			segs = segs[1:]
		}
	}
	if len(segs) == 1 && segs[0] == "" {
		return nil
	}
	return segs
}
