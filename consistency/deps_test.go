package consistency_test

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are import paths a queue-only program must not build: azblob
// pulls in Apache Arrow (22 packages, over a third of a cold build's time;
// BENCHMARKS.md, cold builds). Only consistency/blobstore and
// consistency/ownership, the parts that touch blobs, may import them.
var heavyDeps = []string{
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
	"github.com/apache/arrow",
}

// TestQueueOnlyPartsBuildWithoutAzblob lists what package consistency
// builds (its non-test imports, transitively) and fails on azblob or Arrow
// among them, so a blob type creeping back into a port cannot go
// unnoticed. The same listing of consistency/ownership must find azblob:
// the probe sees it where it is.
func TestQueueOnlyPartsBuildWithoutAzblob(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command: not in -short")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the dependencies with")
	}
	deps := func(pkg string) []string {
		out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	heavy := func(list []string) []string {
		var found []string
		for _, p := range list {
			for _, h := range heavyDeps {
				if strings.HasPrefix(p, h) {
					found = append(found, p)
					break
				}
			}
		}
		return found
	}
	core := deps(".")
	if bad := heavy(core); len(bad) > 0 {
		t.Errorf("package consistency builds %d blob or Arrow packages, first %s: keep azblob types out of its ports (use BlobStore) and put blob code in consistency/blobstore or consistency/ownership", len(bad), bad[0])
	}
	if len(heavy(deps("./ownership"))) == 0 {
		t.Error("consistency/ownership builds no azblob: the probe cannot see azblob, so its verdict on consistency means nothing")
	}
	t.Logf("consistency builds %d packages", len(core))
}
