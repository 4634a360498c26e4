package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
)

// env is where the tour runs: the in-memory fake, or the account of a
// connection string. Every request goes through one counter, so each step
// can say what it cost.
type env struct {
	remote   bool
	svc      *aztables.ServiceClient
	queues   *azqueue.ServiceClient
	blobs    *azblob.Client
	ccreated []string
	counter  *ledger.Ledger // per step
	total    *ledger.Ledger // the whole tour
	created  []string
	qcreated []string
	suffix   string
}

func newEnv(conn string) (*env, error) {
	e := &env{counter: ledger.New(), total: ledger.New()}
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.suffix = hex.EncodeToString(b[:])
	topts, qopts, bopts := &aztables.ClientOptions{}, &azqueue.ClientOptions{}, &azblob.ClientOptions{}
	for _, l := range []*ledger.Ledger{e.counter, e.total} {
		l.Attach(&topts.ClientOptions, ledger.Table)
		l.Attach(&qopts.ClientOptions, ledger.Queue)
		l.Attach(&bopts.ClientOptions, ledger.Blob)
	}
	if conn == "" {
		e.svc = fake.NewTableService(nil).NewServiceClient(topts)
		e.queues = fake.NewQueueService(nil).NewServiceClient(qopts)
		e.blobs = fake.NewBlobService(nil).NewClient(bopts)
		return e, nil
	}
	bc, err := azblob.NewClientFromConnectionString(conn, bopts)
	if err != nil {
		return nil, err
	}
	e.blobs = bc
	svc, err := aztables.NewServiceClientFromConnectionString(conn, topts)
	if err != nil {
		return nil, err
	}
	qs, err := azqueue.NewServiceClientFromConnectionString(conn, qopts)
	if err != nil {
		return nil, err
	}
	e.svc, e.queues, e.remote = svc, qs, true
	return e, nil
}

// newContainer creates a blob container unique to this run (deleted by cleanup).
func (e *env) newContainer(ctx context.Context, base string) (string, error) {
	name := "tour-" + base + "-" + e.suffix
	if _, err := e.blobs.CreateContainer(ctx, name, nil); err != nil {
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	e.ccreated = append(e.ccreated, name)
	e.counter.Reset()
	return name, nil
}

// newQueue creates a queue unique to this run (deleted by cleanup).
func (e *env) newQueue(ctx context.Context, base string) (*azqueue.QueueClient, error) {
	name := "tour-" + base + "-" + e.suffix
	q := e.queues.NewQueueClient(name)
	if _, err := q.Create(ctx, nil); err != nil {
		return nil, fmt.Errorf("create queue %s: %w", name, err)
	}
	e.qcreated = append(e.qcreated, name)
	e.counter.Reset()
	return q, nil
}

// newTable creates a table unique to this run (deleted by cleanup).
func (e *env) newTable(ctx context.Context, base string) (*aztables.Client, error) {
	name := "tour" + base + e.suffix
	if _, err := e.svc.CreateTable(ctx, name, nil); err != nil {
		return nil, fmt.Errorf("create table %s: %w", name, err)
	}
	e.created = append(e.created, name)
	e.counter.Reset()
	return e.svc.NewClient(name), nil
}

// step returns a printer of one line per step with the requests it cost.
func (e *env) step(w io.Writer) func(string) {
	e.counter.Reset()
	return func(what string) {
		fmt.Fprintf(w, "   %-90s [%d requests]\n", what, e.counter.Total())
		e.counter.Reset()
	}
}

func (e *env) cleanup() {
	for _, name := range e.created {
		_, _ = e.svc.DeleteTable(context.Background(), name, nil)
	}
	for _, name := range e.qcreated {
		_, _ = e.queues.NewQueueClient(name).Delete(context.Background(), nil)
	}
	for _, name := range e.ccreated {
		_, _ = e.blobs.DeleteContainer(context.Background(), name, nil)
	}
}
