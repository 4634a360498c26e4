package patterns

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/blobread"
	"github.com/tablekit/tablekit/internal/gz"
	"github.com/tablekit/tablekit/internal/jsonlines"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// LogEntry is one line of a BlobLog. Its stored form, one JSON object
// per line ({"t":<time>,"m":<text>}), is written and read by
// internal/jsonlines; the tags spell the same names for code that
// marshals a LogEntry itself.
type LogEntry struct {
	Time time.Time `json:"t"`
	Text string    `json:"m"`
}

// BlobLogOptions configure a BlobLog. nil means the defaults.
type BlobLogOptions struct {
	// Writer tells this process's blobs from other writers'. Default: "w".
	Writer string
	// MaxBytes flushes when the buffer reaches this size. Default (0):
	// 1 MiB; a negative size is refused by NewBlobLog.
	MaxBytes int
	// MaxAge flushes when the oldest buffered entry is this old, checked
	// on Append and by Run. Default (0): 1 minute; a negative age is
	// refused by NewBlobLog.
	MaxAge time.Duration
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// TracingProvider opens one span per Flush (BlobLog.Flush, with the
	// entry count and outcome as attributes); see "Tracing" in package
	// table's documentation. Default: zero, no spans.
	TracingProvider tracing.Provider
	// Logger receives, at Warn, the flushes Run retries on its next tick.
	// Default: no logging.
	Logger *slog.Logger
	// Compress writes each blob gzip-compressed, marked with the blob
	// property Content-Encoding: gzip (and Content-Type text/plain), so a
	// browser, azcopy --decompress or any HTTP client that honours the
	// header reads the plain lines; log lines shrink several-fold
	// (BENCHMARKS.md). Read reads compressed and plain blobs alike, so
	// it can be switched on for a log that already has plain blobs. The
	// blob names (.log) and the sha256 metadata (of the plain lines) stay
	// as they are. Default: false, plain JSON lines.
	Compress bool
	// MaxBlobBytes bounds, for Read, the inflated size of one
	// gzip-compressed blob; a blob past it fails the read with
	// table.ErrInflatedTooLarge in the chain. Default (0): 256 MiB; a
	// negative bound is refused by NewBlobLog.
	MaxBlobBytes int64
}

// BlobLog writes log data to blobs instead of a table, the fix of the
// guide's "Log data anti-pattern", in the layout of Storage Analytics:
// <prefix>/2014/07/31/1800/<writer>-000001.log, one JSON line per entry,
// with the first and last entry times in the blob's metadata. Entries are
// buffered and written by Flush (on size, on age, on Close, or when called):
// an entry is acknowledged when the Flush that writes it returns nil, and
// a Flush that fails keeps its entries for the next, so nothing acknowledged
// is lost and nothing unacknowledged is dropped silently. Read returns the
// entries of an interval, whichever writer wrote them: a process that only
// reads builds a BlobLog with the same container and prefix (its Writer
// does not matter for reads), which costs no request and starts nothing.
// Safe for concurrent use.
type BlobLog struct {
	blobs     blobstore.Client
	container string
	prefix    string
	opts      BlobLogOptions

	mu     sync.Mutex
	buf    []LogEntry
	size   int
	oldest time.Time
	seq    map[string]int // hour path -> last sequence used
	tr     trace.OpTracer
}

// NewBlobLog writes under prefix in container. No request is sent.
func NewBlobLog(blobs blobstore.Client, container, prefix string, opts *BlobLogOptions) (*BlobLog, error) {
	if err := keyrules.ValidateContainerName(container); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	l := &BlobLog{blobs: blobs, container: container, prefix: prefix, seq: map[string]int{}}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, &table.InputError{Op: "NewBlobLog", Field: "MaxBytes", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is negative; 0 means the default", l.opts.MaxBytes)})
	}
	if l.opts.MaxBlobBytes < 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, &table.InputError{Op: "NewBlobLog", Field: "MaxBlobBytes", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is negative; 0 means the default", l.opts.MaxBlobBytes)})
	}
	if l.opts.MaxAge < 0 {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, &table.InputError{Op: "NewBlobLog", Field: "MaxAge", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%s is negative; 0 means the default", l.opts.MaxAge)})
	}
	if l.opts.Writer == "" {
		l.opts.Writer = "w"
	}
	if l.opts.MaxBytes <= 0 {
		l.opts.MaxBytes = 1 << 20
	}
	if l.opts.MaxAge <= 0 {
		l.opts.MaxAge = time.Minute
	}
	if l.opts.MaxBlobBytes == 0 {
		l.opts.MaxBlobBytes = defaultMaxLogBlobBytes
	}
	l.tr = trace.NewOpTracer(l.opts.TracingProvider, "")
	if l.opts.Now == nil {
		l.opts.Now = time.Now
	}
	if err := keyrules.ValidateBlobName(l.hourPath(time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)) + "/" + l.opts.Writer + "-000001.log"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	return l, nil
}

func (l *BlobLog) hourPath(t time.Time) string {
	return l.prefix + "/" + t.UTC().Format("2006/01/02/15") + "00"
}

// Append buffers an entry stamped now, flushing when the buffer is full or
// old enough. The entry is acknowledged only by a Flush that returns nil.
func (l *BlobLog) Append(ctx context.Context, text string, options *WriteOptions) error {
	return l.AppendAt(ctx, l.opts.Now(), text, nil)
}

// AppendAt buffers an entry with its own time.
func (l *BlobLog) AppendAt(ctx context.Context, at time.Time, text string, options *WriteOptions) error {
	l.mu.Lock()
	if len(l.buf) == 0 {
		l.oldest = l.opts.Now()
	}
	l.buf = append(l.buf, LogEntry{Time: at.UTC(), Text: text})
	l.size += len(text) + 48
	full := l.size >= l.opts.MaxBytes || l.opts.Now().Sub(l.oldest) >= l.opts.MaxAge
	l.mu.Unlock()
	if full {
		return l.Flush(ctx, nil)
	}
	return nil
}

// Flush writes every buffered entry: one blob per hour they fall in, each
// one request (a name already taken, by another writer or an earlier run,
// moves to the next sequence number, after one read that tells such a blob
// from this upload's own earlier attempt whose response was lost: the
// blob's metadata carries the SHA-256 of its content).
func (l *BlobLog) Flush(ctx context.Context, options *WriteOptions) (err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, end := l.tr.Start(ctx, opBlobLogFlush, "", len(l.buf))
	defer func() { end(err) }()
	if len(l.buf) == 0 {
		return nil
	}
	byHour := map[string][]LogEntry{}
	for _, e := range l.buf {
		h := l.hourPath(e.Time)
		byHour[h] = append(byHour[h], e)
	}
	hours := make([]string, 0, len(byHour))
	for h := range byHour {
		hours = append(hours, h)
	}
	sort.Strings(hours)
	for _, h := range hours {
		if err := l.writeHour(ctx, h, byHour[h]); err != nil {
			return err // unwritten hours stay buffered
		}
		l.buf = slices.DeleteFunc(l.buf, func(e LogEntry) bool { return l.hourPath(e.Time) == h })
	}
	l.size = 0
	return nil
}

func (l *BlobLog) writeHour(ctx context.Context, hour string, entries []LogEntry) error {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Time.Before(entries[j].Time) })
	var lines []byte
	for _, e := range entries {
		var err error
		if lines, err = jsonlines.Append(lines, e.Time, e.Text); err != nil {
			return err
		}
	}
	// The digest is of the plain lines whatever the encoding: it names the
	// content, which holds compares.
	sum := sha256.Sum256(lines)
	digest := hex.EncodeToString(sum[:])
	body := lines
	var headers *blob.HTTPHeaders
	if l.opts.Compress {
		body = gz.Compress(lines)
		headers = &blob.HTTPHeaders{BlobContentEncoding: to.Ptr(gz.Encoding), BlobContentType: to.Ptr("text/plain; charset=utf-8")}
	}
	meta := map[string]*string{
		"first":  to.Ptr(entries[0].Time.Format(time.RFC3339Nano)),
		"last":   to.Ptr(entries[len(entries)-1].Time.Format(time.RFC3339Nano)),
		"sha256": to.Ptr(digest),
	}
	for {
		l.seq[hour]++
		name := fmt.Sprintf("%s/%s-%06d.log", hour, l.opts.Writer, l.seq[hour])
		_, err := l.blobs.UploadBuffer(ctx, l.container, name, body, &azblob.UploadBufferOptions{
			Metadata:         meta,
			HTTPHeaders:      headers,
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}},
		})
		err = redact.Error(err) // a transport error names the URL, SAS token included
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusConflict {
			// Taken. By this very upload, if the SDK retried it after its
			// response was lost: the same content is there, so it is done.
			if mine, derr := l.holds(ctx, name, digest); derr != nil {
				l.seq[hour]--
				return derr
			} else if mine {
				return nil
			}
			continue // taken by another: next number
		}
		if err != nil {
			l.seq[hour]--
		}
		return err
	}
}

// holds reports whether blob name carries the content digest: one
// request, for the metadata of its first byte.
func (l *BlobLog) holds(ctx context.Context, name, digest string) (bool, error) {
	resp, err := l.blobs.DownloadStream(ctx, l.container, name, &azblob.DownloadStreamOptions{Range: azblob.HTTPRange{Count: 1}})
	err = redact.Error(err) // a transport error names the URL, SAS token included
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	for k, v := range resp.Metadata {
		if strings.EqualFold(k, "sha256") && v != nil {
			return *v == digest, nil
		}
	}
	return false, nil
}

// Run flushes whenever the oldest buffered entry reaches MaxAge, until ctx
// ends; then it flushes what is left.
func (l *BlobLog) Run(ctx context.Context, options *WriteOptions) error {
	t := time.NewTicker(max(l.opts.MaxAge/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return l.Flush(context.WithoutCancel(ctx), nil)
		case <-t.C:
			l.mu.Lock()
			due := len(l.buf) > 0 && l.opts.Now().Sub(l.oldest) >= l.opts.MaxAge
			l.mu.Unlock()
			if due {
				if err := l.Flush(ctx, nil); err != nil && ctx.Err() == nil {
					if l.opts.Logger != nil {
						l.opts.Logger.WarnContext(ctx, "tablekit: BlobLog flush failed; the entries stay buffered for the next tick", "container", l.container, "prefix", l.prefix, "error", redact.Error(err))
					}
					continue // kept buffered; the next tick tries again
				}
			}
		}
	}
}

// Close flushes what is buffered.
func (l *BlobLog) Close(ctx context.Context, options *WriteOptions) error {
	return l.Flush(ctx, nil)
}

// Read returns the entries of [from, until) written under the log's prefix
// by any writer, in time order: one listing request per hour the range
// covers, one read per blob whose first/last times overlap the range.
// Entries still buffered in this BlobLog are not read (they are not written
// yet). Plain and gzip-compressed blobs (BlobLogOptions.Compress) read
// alike; a compressed blob inflates to at most BlobLogOptions.MaxBlobBytes.
func (l *BlobLog) Read(ctx context.Context, from, until time.Time, options *ReadOptions) iter.Seq2[LogEntry, error] {
	return func(yield func(LogEntry, error) bool) {
		if until.Before(from) {
			yield(LogEntry{}, &table.InputError{Op: opBlobLogRead, Field: "until", Rule: table.ErrInvalidValue, Detail: fmt.Sprintf("until %s is before from %s", until.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))})
			return
		}
		blobs, container, limit := l.blobs, l.container, l.opts.MaxBlobBytes
		for h := from.UTC().Truncate(time.Hour); h.Before(until); h = h.Add(time.Hour) {
			var hour []LogEntry
			pager := blobs.NewListBlobsFlatPager(container, &azblob.ListBlobsFlatOptions{Prefix: to.Ptr(l.hourPath(h) + "/"), Include: azblob.ListBlobsInclude{Metadata: true}})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				err = redact.Error(err) // a transport error names the URL, SAS token included
				if err != nil {
					yield(LogEntry{}, err)
					return
				}
				for _, item := range page.Segment.BlobItems {
					if skip(item.Metadata, from, until) {
						continue
					}
					// Plain and compressed blobs alike; the gzip magic marks
					// a compressed copy that lost its Content-Encoding (a
					// line of JSON never starts with it).
					b, err := blobread.Read(ctx, blobs, container, *item.Name, &blobread.Options{MaxInflated: limit, SniffGzip: true})
					if err != nil {
						yield(LogEntry{}, err)
						return
					}
					sc := bufio.NewScanner(b.Body)
					sc.Buffer(make([]byte, 64*1024), 8<<20)
					for sc.Scan() {
						var e LogEntry
						var err error
						if e.Time, e.Text, err = jsonlines.Parse(sc.Bytes()); err != nil {
							if serr := sc.Err(); serr != nil {
								err = serr // the body failed mid-line (a bound, a broken connection): that is the cause
							}
							b.Body.Close()
							yield(LogEntry{}, fmt.Errorf("patterns: log blob %s: %w", *item.Name, err))
							return
						}
						if !e.Time.Before(from) && e.Time.Before(until) {
							hour = append(hour, e)
						}
					}
					b.Body.Close()
					if err := sc.Err(); err != nil {
						// A blob read short (a line over the limit, a broken
						// connection) must not pass for a complete one.
						yield(LogEntry{}, fmt.Errorf("patterns: log blob %s: %w", *item.Name, err))
						return
					}
				}
			}
			sort.SliceStable(hour, func(i, j int) bool { return hour[i].Time.Before(hour[j].Time) })
			for _, e := range hour {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// skip reports a blob whose first/last metadata lie outside [from, until).
func skip(meta map[string]*string, from, until time.Time) bool {
	get := func(k string) (time.Time, bool) {
		for mk, v := range meta {
			if v != nil && strings.EqualFold(mk, k) {
				t, err := time.Parse(time.RFC3339Nano, *v)
				return t, err == nil
			}
		}
		return time.Time{}, false
	}
	first, ok1 := get("first")
	last, ok2 := get("last")
	return ok1 && ok2 && (last.Before(from) || !first.Before(until))
}

// defaultMaxLogBlobBytes bounds what one compressed log blob may inflate
// to: 256 MiB, the single Put Blob limit of the service versions before
// 2019-12-12 and far above the 1 MiB a BlobLog flushes at by default, so
// a crafted blob (a decompression bomb) costs BlobLog.Read at most that much.
const defaultMaxLogBlobBytes = 256 << 20
