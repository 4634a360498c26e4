package conformance

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/svcanswer"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// responseErrors lists every *azcore.ResponseError in err's tree.
func responseErrors(err error) []*azcore.ResponseError {
	var out []*azcore.ResponseError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if re, ok := err.(*azcore.ResponseError); ok {
			out = append(out, re)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// onlyTheServicesAnswers fails when err's tree holds an
// *azcore.ResponseError that no response produced (built by hand: no raw
// response), or none at all although the service answered.
func onlyTheServicesAnswers(t *testing.T, err error) {
	t.Helper()
	res := responseErrors(err)
	if len(res) == 0 {
		t.Errorf("the service's *azcore.ResponseError is not in the chain: %v", err)
	}
	for _, re := range res {
		if re.RawResponse == nil {
			t.Errorf("the chain holds a hand-built *azcore.ResponseError (%d %s, no response): %v", re.StatusCode, re.ErrorCode, err)
		}
	}
}

// runErrorChain checks that tablekit's errors carry the service's own
// answer and classify it so a caller can act: the failed operation's code
// for a transaction, a missing table told apart from a missing entity, and
// no *azcore.ResponseError made by hand.
func runErrorChain(t *testing.T, env backend, svc func(t *testing.T, c *reqcount.Counter) *aztables.ServiceClient) {
	ctx := t.Context()

	t.Run("Modify's lost race keeps the service's own answer", func(t *testing.T) {
		tb, _, _ := newEmployees(t, env)
		if err := tb.Add(ctx, &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "gone"}}, nil); err != nil {
			t.Fatal(err)
		}
		// The entity is deleted between Modify's read and its write: a
		// lost race the service reports as 404.
		_, err := tb.Modify(ctx, "Sales", "gone", func(e *employee) error {
			if e.ETag != "" {
				if err := tb.Delete(ctx, "Sales", "gone", nil); err != nil {
					return err
				}
			}
			e.FirstName = "set"
			return nil
		}, &table.ModifyOptions{Create: true, MaxAttempts: 1})
		var ce *table.ConflictError
		if !errors.As(err, &ce) || !table.Is(err, table.ErrLostRace) {
			t.Fatalf("want a lost race, got %v", err)
		}
		onlyTheServicesAnswers(t, err)
		if svcanswer.StatusCode(err) != http.StatusNotFound || svcanswer.ErrorCode(err) != "ResourceNotFound" {
			t.Errorf("StatusCode %d, ErrorCode %q: want the service's 404 ResourceNotFound", svcanswer.StatusCode(err), svcanswer.ErrorCode(err))
		}
	})

	t.Run("a failed transaction's code is its failed operation's", func(t *testing.T) {
		_, _, client := newEmployees(t, env)
		e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "dup"}}
		if _, err := batch.Submit(ctx, client, []batch.Op{batch.Add(e)}, nil); err != nil {
			t.Fatal(err)
		}
		for name, run := range map[string]func() error{
			"Submit": func() error {
				_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "other"}}), batch.Add(e)}, nil)
				return err
			},
			"Writer": func() error {
				_, err := batch.NewWriter(client, nil).Write(ctx, slices.Values([]batch.Op{batch.Add(e)}), nil)
				return err
			},
		} {
			err := run()
			if !errors.Is(err, table.ErrAlreadyExists) {
				t.Fatalf("%s: want EntityAlreadyExists, got %v", name, err)
			}
			if got := svcanswer.ErrorCode(err); got != "EntityAlreadyExists" {
				t.Errorf("%s: ErrorCode = %q, want the failed operation's EntityAlreadyExists", name, got)
			}
			if got := svcanswer.StatusCode(err); got != http.StatusConflict {
				t.Errorf("%s: StatusCode = %d, want the failed operation's 409", name, got)
			}
			onlyTheServicesAnswers(t, err)
		}
	})

	t.Run("a missing queue or container is not a missing message or blob", func(t *testing.T) {
		runMissingContainers(t, env)
	})

	t.Run("a missing table is not a missing entity", func(t *testing.T) {
		tb, err := table.New[employee](svc(t, &reqcount.Counter{}).NewClient(testenv.UniqueName("never")), nil)
		if err != nil {
			t.Fatal(err)
		}
		client := tb.Client()
		e := &employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}}
		_, getErr := tb.Get(ctx, "Sales", "1", nil)
		_, subErr := batch.Submit(ctx, client, []batch.Op{batch.Add(e)}, nil)
		cases := map[string]error{
			"Get":                getErr,
			"Add":                tb.Add(ctx, e, nil),
			"Update":             tb.Update(ctx, e, &table.UpdateOptions{IfMatch: to.Ptr(azcore.ETagAny)}),
			"Delete":             tb.Delete(ctx, "Sales", "1", nil),
			"Delete IfExists":    tb.Delete(ctx, "Sales", "1", &table.DeleteOptions{IfExists: true}),
			"batch Submit":       subErr,
			"Modify with Create": modifyErr(t, tb),
		}
		for name, err := range cases {
			if err == nil {
				t.Errorf("%s on a missing table succeeded", name)
				continue
			}
			if table.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrNotFound) {
				t.Errorf("%s: a missing table is reported as a missing entity: %v", name, err)
			}
			if !table.Is(err, table.ErrTableNotFound) || !errors.Is(err, table.ErrTableNotFound) {
				t.Errorf("%s: want ErrTableNotFound, got code %q: %v", name, svcanswer.ErrorCode(err), err)
			}
			onlyTheServicesAnswers(t, err)
		}
		// Deleting a table that is not there names no table in a path:
		// the service answers 404 ResourceNotFound, the resource being the
		// table itself. Code that drops tables (rolling tables) relies on it.
		sc := svc(t, &reqcount.Counter{})
		_, err = sc.DeleteTable(ctx, testenv.UniqueName("never"), nil)
		t.Logf("%s: DeleteTable of a missing table: %d %s", env.Name, svcanswer.StatusCode(err), svcanswer.ErrorCode(err))
		if !table.Is(err, table.ErrNotFound) && !table.Is(err, table.ErrTableNotFound) {
			t.Errorf("DeleteTable of a missing table: %v", err)
		}
	})
}

// runMissingContainers checks that a missing queue or blob container is
// told apart from a missing message or blob: the service's codes are
// QueueNotFound and ContainerNotFound, which table.ErrNotFound does not
// match; table.ErrQueueNotFound and ErrContainerNotFound do.
func runMissingContainers(t *testing.T, env backend) {
	ctx := t.Context()
	q := env.NewQueue(t, nil)
	if _, err := q.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := q.EnqueueMessage(ctx, "x", nil)
	if svcanswer.StatusCode(err) != http.StatusNotFound || svcanswer.ErrorCode(err) != "QueueNotFound" || table.Is(err, table.ErrNotFound) || !table.Is(err, table.ErrQueueNotFound) {
		t.Errorf("enqueue to a deleted queue: %d %q, Is ErrNotFound %v: %v", svcanswer.StatusCode(err), svcanswer.ErrorCode(err), table.Is(err, table.ErrNotFound), err)
	}
	blobs, container := env.NewContainer(t, nil)
	_, err = blobs.DownloadStream(ctx, container, "absent", nil)
	if svcanswer.StatusCode(err) != http.StatusNotFound || svcanswer.ErrorCode(err) != "BlobNotFound" || !table.Is(err, table.ErrNotFound) || table.Is(err, table.ErrContainerNotFound) {
		t.Errorf("a missing blob: %d %q, Is ErrNotFound %v: %v", svcanswer.StatusCode(err), svcanswer.ErrorCode(err), table.Is(err, table.ErrNotFound), err)
	}
	if _, err := blobs.DeleteContainer(ctx, container, nil); err != nil {
		t.Fatal(err)
	}
	_, err = blobs.UploadBuffer(ctx, container, "a", []byte("x"), nil)
	if svcanswer.StatusCode(err) != http.StatusNotFound || svcanswer.ErrorCode(err) != "ContainerNotFound" || table.Is(err, table.ErrNotFound) || !table.Is(err, table.ErrContainerNotFound) {
		t.Errorf("upload to a deleted container: %d %q, Is ErrNotFound %v: %v", svcanswer.StatusCode(err), svcanswer.ErrorCode(err), table.Is(err, table.ErrNotFound), err)
	}
}

// modifyErr runs a creating Modify on tb's table.
func modifyErr(t *testing.T, tb *table.Table[employee]) error {
	_, err := tb.Modify(t.Context(), "Sales", "1", func(e *employee) error { e.FirstName = "new"; return nil }, &table.ModifyOptions{Create: true})
	return err
}
