package apishape

import (
	"go/token"
	"os"
	"path/filepath"
	"testing"
)

// exceptions are the ctx functions and methods that keep a signature
// without trailing options, each with the reason. An entry that no longer
// names a miss fails the test, so the list cannot outlive its reason.
var exceptions = map[string]string{
	// KeyWrapper is implemented by the user over a key vault or a KMS
	// (azkeys' WrapKey/UnwrapKey take their own options, which an adapter
	// passes itself); options here would be a parameter every
	// implementation ignores. LocalKeys implements it.
	"table.KeyWrapper.WrapKey":   "interface the user implements",
	"table.KeyWrapper.UnwrapKey": "interface the user implements",
	"table.LocalKeys.WrapKey":    "implements table.KeyWrapper",
	"table.LocalKeys.UnwrapKey":  "implements table.KeyWrapper",

	// Handle and Process methods are consistency.Handler values, a func
	// type whose signature the Worker defines: a Worker calls them, users
	// do not.
	"patterns.Model.Process":    "a consistency.Handler",
	"consistency.Mover.Process": "a consistency.Handler",

	// ProcessBatch methods are consistency.BatchHandler values, as above.
	"patterns.Model.ProcessBatch":    "a consistency.BatchHandler",
	"consistency.Mover.ProcessBatch": "a consistency.BatchHandler",

	// BlobStore is the port a user implements for the blobs of payloads
	// and of BlobTarget: blobstore.Store (or the user) implements it, and the
	// package's Sender, Worker and BlobTarget are its only callers.
	"consistency.BlobStore.Put":    "interface the user implements",
	"consistency.BlobStore.Get":    "interface the user implements",
	"consistency.BlobStore.Delete": "interface the user implements",
	"blobstore.Store.Put":          "implements consistency.BlobStore",
	"blobstore.Store.Get":          "implements consistency.BlobStore",
	"blobstore.Store.Delete":       "implements consistency.BlobStore",

	// A context helper, like azcore's runtime.WithCaptureResponse: it
	// attaches a QueryStats to a context and sends nothing.
	"table.WithQueryStats": "returns a context; sends no request",
}

// minChecked guards the walk itself: the public packages have about 160
// ctx functions and methods, so fewer than 120 means the walk or the parse
// missed packages, and a clean result would prove nothing.
const minChecked = 120

// TestEveryContextMethodEndsWithOptions parses every public package of the
// module (all but internal/, examples/, tools/, cmd/ and testdata) and
// reports each exported ctx function or method, interface methods
// included, without a trailing *XxxOptions that is not an exception.
func TestEveryContextMethodEndsWithOptions(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	all, nfiles, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	checked, misses := check(all)
	if checked < minChecked {
		t.Fatalf("checked %d ctx functions and methods in %d files, want at least %d: the walk missed packages", checked, nfiles, minChecked)
	}
	t.Logf("checked %d ctx functions and methods in %d files", checked, nfiles)
	excused := map[string]bool{}
	for _, m := range misses {
		if _, ok := exceptions[m.name]; ok {
			excused[m.name] = true
			continue
		}
		t.Errorf("%s: %s takes a context first but does not end with a *XxxOptions parameter (nil = defaults)", m.pos, m.name)
	}
	for name := range exceptions {
		if !excused[name] {
			t.Errorf("exception %s matches no miss any more: remove it", name)
		}
	}
}

// miss is an exported ctx function or method without trailing options.
type miss struct {
	pos  token.Position
	name string // pkg.Func, pkg.Type.Method or pkg.Interface.Method
}

// check returns how many of fs there are and those of them that do not end
// with a *XxxOptions parameter.
func check(fs []Func) (checked int, misses []miss) {
	for _, f := range fs {
		if !f.Options {
			misses = append(misses, miss{pos: f.Pos, name: f.Name})
		}
	}
	return len(fs), misses
}
