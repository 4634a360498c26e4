package fake_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
)

// noRetry keeps the SDK from retrying, so a test sees every answer.
var noRetry = azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}

// busyClock is a manual clock for a Busy and its services.
type busyClock struct{ t time.Time }

func (c *busyClock) now() time.Time          { return c.t }
func (c *busyClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// busyTable is a table "tbl" on a TableService with a Busy of opts, on
// a manual clock. Creating the table costs the account one request.
func busyTable(t *testing.T, opts fake.BusyOptions) (*fake.Busy, *aztables.Client, *busyClock) {
	t.Helper()
	clk := &busyClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts.Now = clk.now
	b := fake.NewBusy(&opts)
	svc := fake.NewTableService(&fake.TableServiceOptions{Busy: b, Now: clk.now})
	c := svc.NewClient("tbl", &aztables.ClientOptions{ClientOptions: noRetry})
	if _, err := c.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	return b, c, clk
}

// answer is an error's status, error code and message (first line).
func answer(t *testing.T, err error) (int, string, string) {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want a ResponseError, got %v", err)
	}
	body, _ := io.ReadAll(re.RawResponse.Body)
	msg := string(body)
	for _, open := range []string{`"value":"`, "<Message>"} {
		if i := strings.Index(msg, open); i >= 0 {
			msg = msg[i+len(open):]
		}
	}
	for _, sep := range []string{`\n`, "&#xA;"} {
		msg, _, _ = strings.Cut(msg, sep)
	}
	return re.StatusCode, re.ErrorCode, msg
}

func addEntity(t *testing.T, c *aztables.Client, pk, rk string) error {
	t.Helper()
	_, err := c.AddEntity(t.Context(), entity(pk, rk, ""), nil)
	return err
}

func TestBusyPartitionTarget(t *testing.T) {
	_, c, _ := busyTable(t, fake.BusyOptions{PerPartition: 10, PerAccount: 1000})
	for i := range 10 {
		if err := addEntity(t, c, "hot", fmt.Sprint(i)); err != nil {
			t.Fatalf("entity %d within the partition's target: %v", i, err)
		}
	}
	status, code, msg := answer(t, addEntity(t, c, "hot", "10"))
	if status != 503 || code != "ServerBusy" || msg != "The server is currently unable to receive requests. Please retry your request." {
		t.Fatalf("over the partition's target: %d %s %q", status, code, msg)
	}
	// Other partitions are served meanwhile.
	if err := addEntity(t, c, "cold", "0"); err != nil {
		t.Fatalf("another partition: %v", err)
	}
	// Every kind of entity request draws on its partition.
	if _, err := c.GetEntity(t.Context(), "hot", "0", nil); err == nil {
		t.Fatal("GetEntity on the throttled partition was served")
	}
}

func TestBusyAccountTarget(t *testing.T) {
	b, c, _ := busyTable(t, fake.BusyOptions{PerPartition: 1000, PerAccount: 10})
	for i := range 9 { // the table's creation took the tenth
		if err := addEntity(t, c, fmt.Sprint("p", i), "r"); err != nil {
			t.Fatalf("entity %d within the account's target: %v", i, err)
		}
	}
	status, code, msg := answer(t, addEntity(t, c, "p9", "r"))
	if status != 503 || code != "ServerBusy" || msg != "Operations per second is over the account limit." {
		t.Fatalf("over the account's target: %d %s %q", status, code, msg)
	}
	if b.Throttled() != 1 || b.Passed() != 10 {
		t.Fatalf("Throttled %d Passed %d, want 1 and 10", b.Throttled(), b.Passed())
	}
}

// A transaction costs one entity per operation, and a query page one per
// entity it returns.
func TestBusyCountsEntities(t *testing.T) {
	_, c, clk := busyTable(t, fake.BusyOptions{PerPartition: 10, PerAccount: 1000})
	tx := func(first int) error {
		var acts []aztables.TransactionAction
		for i := range 4 {
			acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: entity("p", fmt.Sprint(first+i), "")})
		}
		_, err := c.SubmitTransaction(t.Context(), acts, nil)
		return err
	}
	if err := tx(0); err != nil {
		t.Fatal(err)
	}
	if err := tx(4); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := answer(t, tx(8)); status != 503 || code != "ServerBusy" {
		t.Fatalf("third transaction of 4 on a target of 10: %d %s", status, code)
	}
	clk.advance(time.Second)
	// A page of 8 entities leaves 2 of the partition's 10.
	pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p'")})
	page, err := pager.NextPage(t.Context())
	if err != nil || len(page.Entities) != 8 {
		t.Fatalf("query: %d entities, %v", len(page.Entities), err)
	}
	if err := tx(8); err == nil {
		t.Fatal("a transaction of 4 was served after a page of 8 on a target of 10")
	}
	if err := addEntity(t, c, "p", "x"); err != nil {
		t.Fatalf("one entity within what the page left: %v", err)
	}
}

func TestBusyOperationTimedOut(t *testing.T) {
	_, c, _ := busyTable(t, fake.BusyOptions{PerPartition: 1, PerAccount: 1000, TimeoutEvery: 2})
	if err := addEntity(t, c, "p", "0"); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := answer(t, addEntity(t, c, "p", "1")); status != 503 || code != "ServerBusy" {
		t.Fatalf("first refusal: %d %s", status, code)
	}
	status, code, msg := answer(t, addEntity(t, c, "p", "2"))
	if status != 500 || code != "OperationTimedOut" || msg != "The operation could not be completed within the permitted time." {
		t.Fatalf("second refusal: %d %s %q", status, code, msg)
	}
}

// A refused request takes nothing: once the load stops, the targets
// refill at their rates, up to Burst's worth.
func TestBusyRecovers(t *testing.T) {
	_, c, clk := busyTable(t, fake.BusyOptions{PerPartition: 10, PerAccount: 1000})
	n := 0
	add := func() error { n++; return addEntity(t, c, "p", fmt.Sprint(n)) }
	for range 10 {
		if err := add(); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if add() == nil {
			t.Fatal("served over the target")
		}
	}
	clk.advance(500 * time.Millisecond)
	for i := range 5 {
		if err := add(); err != nil {
			t.Fatalf("half a second refills half the target; request %d: %v", i, err)
		}
	}
	if add() == nil {
		t.Fatal("served past what half a second refilled")
	}
	clk.advance(time.Hour)
	for i := range 10 {
		if err := add(); err != nil {
			t.Fatalf("after a quiet spell the whole burst passes; request %d: %v", i, err)
		}
	}
	if add() == nil {
		t.Fatal("a quiet spell refilled more than Burst's worth")
	}
}

// The default clock is time.Now, so a Busy runs in a synctest bubble's
// virtual time and recovers when the bubble's clock moves.
func TestBusyInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fake.NewBusy(&fake.BusyOptions{PerPartition: 5, PerAccount: 1000})
		svc := fake.NewTableService(&fake.TableServiceOptions{Busy: b})
		c := svc.NewClient("tbl", &aztables.ClientOptions{ClientOptions: noRetry})
		if _, err := c.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := addEntity(t, c, "p", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		if addEntity(t, c, "p", "5") == nil {
			t.Fatal("served over the target")
		}
		time.Sleep(time.Second)
		if err := addEntity(t, c, "p", "5"); err != nil {
			t.Fatalf("after a virtual second: %v", err)
		}
	})
}

// The SDK's retry policy retries a 503 by itself: with its retries on, a
// request over the target is served once the partition has refilled.
func TestBusyRetriedBySDK(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fake.NewBusy(&fake.BusyOptions{PerPartition: 2, PerAccount: 1000})
		svc := fake.NewTableService(&fake.TableServiceOptions{Busy: b})
		svc.SetRetryDelays(200*time.Millisecond, time.Second)
		c := svc.NewClient("tbl", nil)
		if _, err := c.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := addEntity(t, c, "p", fmt.Sprint(i)); err != nil {
				t.Fatalf("entity %d: %v", i, err)
			}
		}
		if b.Throttled() == 0 {
			t.Fatal("the third entity was never refused")
		}
	})
}

func TestBusyQueueTarget(t *testing.T) {
	clk := &busyClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := fake.NewBusy(&fake.BusyOptions{PerQueue: 3, PerAccount: 1000, Now: clk.now})
	svc := fake.NewQueueService(&fake.QueueServiceOptions{Busy: b, Now: clk.now})
	q := svc.NewQueueClient("jobs", &azqueue.ClientOptions{ClientOptions: noRetry})
	other := svc.NewQueueClient("other", &azqueue.ClientOptions{ClientOptions: noRetry})
	for _, c := range []*azqueue.QueueClient{q, other} {
		if _, err := c.Create(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 { // Create took the first
		if _, err := q.EnqueueMessage(t.Context(), fmt.Sprint(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := q.EnqueueMessage(t.Context(), "over", nil)
	if status, code, msg := answer(t, err); status != 503 || code != "ServerBusy" || msg != "The server is currently unable to receive requests. Please retry your request." {
		t.Fatalf("over the queue's target: %d %s %q", status, code, msg)
	}
	if _, err := other.EnqueueMessage(t.Context(), "x", nil); err != nil {
		t.Fatalf("another queue: %v", err)
	}
	clk.advance(time.Second)
	// Get Messages costs one per message asked for.
	if _, err := q.DequeueMessages(t.Context(), &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr[int32](3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMessage(t.Context(), "x", nil); err == nil {
		t.Fatal("served after Get Messages of 3 on a target of 3")
	}
}

func TestBusyBlobTargets(t *testing.T) {
	clk := &busyClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := fake.NewBusy(&fake.BusyOptions{PerBlob: 3, PerAccount: 1000, Ingress: 100, Egress: 150, Now: clk.now})
	svc := fake.NewBlobService(&fake.BlobServiceOptions{Busy: b, Now: clk.now})
	c := svc.NewClient(&azblob.ClientOptions{ClientOptions: noRetry})
	ctx := t.Context()
	if _, err := c.CreateContainer(ctx, "box", nil); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 60)
	if _, err := c.UploadBuffer(ctx, "box", "a", body, nil); err != nil {
		t.Fatal(err)
	}
	// 60 of the account's 100 bytes of ingress are spent.
	_, err := c.UploadBuffer(ctx, "box", "b", body, nil)
	if status, code, msg := answer(t, err); status != 503 || code != "ServerBusy" || msg != "Ingress is over the account limit." {
		t.Fatalf("over ingress: %d %s %q", status, code, msg)
	}
	clk.advance(time.Second)
	for i := range 2 {
		if _, err := c.DownloadBuffer(ctx, "box", "a", make([]byte, 60), nil); err != nil {
			t.Fatalf("download %d: %v", i, err)
		}
	}
	// 120 of 150 bytes of egress are spent: the third download passes
	// and overdraws, and the fourth is refused.
	if _, err := c.DownloadBuffer(ctx, "box", "a", make([]byte, 60), nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.DownloadBuffer(ctx, "box", "a", make([]byte, 60), nil)
	if status, code, msg := answer(t, err); status != 503 || code != "ServerBusy" || msg != "Egress is over the account limit." {
		t.Fatalf("over egress: %d %s %q", status, code, msg)
	}
	clk.advance(time.Hour)
	blob := c.ServiceClient().NewContainerClient("box").NewBlobClient("a")
	for i := range 3 {
		if _, err := blob.GetProperties(ctx, nil); err != nil {
			t.Fatalf("request %d within the blob's target: %v", i, err)
		}
	}
	if _, err := blob.GetProperties(ctx, nil); err == nil {
		t.Fatal("served over the blob's target")
	}
}

// Services that share a Busy share the account's target.
func TestBusySharedAccount(t *testing.T) {
	clk := &busyClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := fake.NewBusy(&fake.BusyOptions{PerAccount: 3, Now: clk.now})
	tables := fake.NewTableService(&fake.TableServiceOptions{Busy: b, Now: clk.now})
	queues := fake.NewQueueService(&fake.QueueServiceOptions{Busy: b, Now: clk.now})
	if _, err := tables.NewClient("tbl", &aztables.ClientOptions{ClientOptions: noRetry}).CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	q := queues.NewQueueClient("jobs", &azqueue.ClientOptions{ClientOptions: noRetry})
	if _, err := q.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMessage(t.Context(), "x", nil); err != nil {
		t.Fatal(err)
	}
	_, err := q.EnqueueMessage(t.Context(), "y", nil)
	if status, _, msg := answer(t, err); status != 503 || msg != "Operations per second is over the account limit." {
		t.Fatalf("fourth request of the account: %d %q", status, msg)
	}
}

// A refused request is counted, as the service received it, and touches
// no data.
func TestBusyRefusalCountedNotApplied(t *testing.T) {
	clk := &busyClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := fake.NewBusy(&fake.BusyOptions{PerPartition: 1, Now: clk.now})
	svc := fake.NewTableService(&fake.TableServiceOptions{Busy: b, Now: clk.now})
	c := svc.NewClient("tbl", &aztables.ClientOptions{ClientOptions: noRetry})
	if _, err := c.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := addEntity(t, c, "p", "0"); err != nil {
		t.Fatal(err)
	}
	if addEntity(t, c, "p", "1") == nil {
		t.Fatal("served over the target")
	}
	if got := svc.Count(fake.OpInsertEntity); got != 2 {
		t.Fatalf("InsertEntity count %d, want 2", got)
	}
	if got := svc.Len("tbl"); got != 1 {
		t.Fatalf("%d entities stored, want 1", got)
	}
}

// A transaction draws on the partition its operations name, read from a
// delete's URL as from an insert's body, with the partition's single
// requests; the empty PartitionKey is a partition like any other.
func TestBusyTransactionKeys(t *testing.T) {
	for _, pk := range []string{"o'k", ""} {
		_, c, _ := busyTable(t, fake.BusyOptions{PerPartition: 4, PerAccount: 1000})
		for i := range 4 {
			if err := addEntity(t, c, pk, fmt.Sprint(i)); err != nil {
				t.Fatalf("%q: %v", pk, err)
			}
		}
		if addEntity(t, c, pk, "4") == nil {
			t.Fatalf("partition %q served over its target", pk)
		}
		acts := []aztables.TransactionAction{
			{ActionType: aztables.TransactionTypeDelete, Entity: entity(pk, "0", "")},
			{ActionType: aztables.TransactionTypeDelete, Entity: entity(pk, "1", "")},
		}
		if _, err := c.SubmitTransaction(t.Context(), acts, nil); err == nil {
			t.Fatalf("a transaction of deletes on partition %q was served over its target", pk)
		}
		if err := addEntity(t, c, pk+"x", "0"); err != nil {
			t.Fatalf("another partition: %v", err)
		}
	}
}

// TimeoutEvery counts the refusals over a partition's target alone: the
// account's are always 503 ServerBusy.
func TestBusyTimeoutEveryCountsPartitionRefusals(t *testing.T) {
	_, c, clk := busyTable(t, fake.BusyOptions{PerPartition: 1, PerAccount: 3, TimeoutEvery: 2})
	if err := addEntity(t, c, "p", "0"); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := answer(t, addEntity(t, c, "p", "1")); status != 503 || code != "ServerBusy" {
		t.Fatalf("first partition refusal: %d %s", status, code)
	}
	if err := addEntity(t, c, "q", "0"); err != nil { // the account's third
		t.Fatal(err)
	}
	if _, _, msg := answer(t, addEntity(t, c, "r", "0")); msg != "Operations per second is over the account limit." {
		t.Fatalf("account refusal: %q", msg)
	}
	clk.advance(time.Second)
	if err := addEntity(t, c, "p", "1"); err != nil {
		t.Fatal(err)
	}
	if status, code, _ := answer(t, addEntity(t, c, "p", "2")); status != 500 || code != "OperationTimedOut" {
		t.Fatalf("second partition refusal: %d %s", status, code)
	}
}
