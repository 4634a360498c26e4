package eventstream_test

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// AccountEvent is an event of a bank account's stream.
type AccountEvent struct {
	eventstream.Event
	Kind   string
	Amount int64
}

// AccountSnapshot is the account's state as of a version.
type AccountSnapshot struct {
	eventstream.Snapshot
	Balance int64
}

// AccountSummary is a projection kept in the stream's partition, written
// atomically with the events that change it.
type AccountSummary struct {
	table.Meta
	Balance int64
}

func ExampleStore() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Accounts", nil)
	_, _ = client.CreateTable(ctx, nil)
	svc.ResetCounts()

	accounts, err := eventstream.New[AccountEvent](client, nil)
	if err != nil {
		panic(err)
	}

	// A new stream needs no read: its first append creates it.
	head := eventstream.NewHead("acct-42")
	opened := []*AccountEvent{
		{Event: eventstream.Event{ID: "msg-1"}, Kind: "opened"},
		{Event: eventstream.Event{ID: "msg-2"}, Kind: "deposited", Amount: 100},
	}
	summary := &AccountSummary{Meta: table.Meta{PartitionKey: "acct-42", RowKey: "summary"}, Balance: 100}
	head, err = accounts.Append(ctx, head, opened, &eventstream.AppendOptions{
		Include:  []batch.Op{batch.Add(summary)}, // committed with the events, or not at all
		Snapshot: &AccountSnapshot{Balance: 100}, // stamped with the version the append commits
	})
	if err != nil {
		panic(err)
	}
	// The next append goes from the head the last one returned: one request.
	summary.Balance = 75
	head, err = accounts.Append(ctx, head, []*AccountEvent{
		{Event: eventstream.Event{ID: "msg-3"}, Kind: "withdrew", Amount: 25},
	}, &eventstream.AppendOptions{Include: []batch.Op{batch.Update(summary, aztables.UpdateModeReplace)}})
	if err != nil {
		panic(err)
	}
	fmt.Println("version", head.Version(), "after", svc.Total(), "requests")

	// A redelivered message is refused whole, and nothing is written.
	_, err = accounts.Append(ctx, head, []*AccountEvent{{Event: eventstream.Event{ID: "msg-2"}, Kind: "deposited", Amount: 100}}, nil)
	fmt.Println("redelivery:", errors.Is(err, eventstream.ErrDuplicateEvent))

	// A writer holding an old head loses the race, and can retry.
	stale := eventstream.NewHead("acct-42")
	_, err = accounts.Append(ctx, stale, []*AccountEvent{{Kind: "deposited", Amount: 5}}, nil)
	fmt.Println("stale head:", errors.Is(err, eventstream.ErrConflict), table.Is(err, table.ErrLostRace))

	// Rebuild the state: the snapshot, then the events after it (all of
	// them when there is no snapshot: its Version is then 0).
	var snap AccountSnapshot
	if err := accounts.LoadSnapshot(ctx, "acct-42", &snap, nil); err != nil {
		panic(err)
	}
	balance := snap.Balance
	for e, err := range accounts.Read(ctx, "acct-42", snap.Version+1, nil) {
		if err != nil {
			panic(err)
		}
		fmt.Println("replay", e.Version, e.Kind, e.Amount)
		switch e.Kind {
		case "deposited":
			balance += e.Amount
		case "withdrew":
			balance -= e.Amount
		}
	}
	fmt.Println("balance", balance)

	// The latest events first: a backward read from past the last version.
	for e, err := range accounts.Read(ctx, "acct-42", math.MaxInt64, &eventstream.ReadOptions{Backward: true}) {
		if err != nil {
			panic(err)
		}
		fmt.Println("backward", e.Version, e.Kind)
	}
	// Output:
	// version 3 after 2 requests
	// redelivery: true
	// stale head: true true
	// replay 3 withdrew 25
	// balance 75
	// backward 3 withdrew
	// backward 2 deposited
	// backward 1 opened
}

// ErrInsufficientFunds refuses a withdrawal the account's history does not
// cover.
var ErrInsufficientFunds = errors.New("insufficient funds")

func ExampleStore_AppendFunc() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Accounts", nil)
	_, _ = client.CreateTable(ctx, nil)
	accounts, _ := eventstream.New[AccountEvent](client, nil)

	// Withdraw only what the stream's history allows: decide rebuilds the
	// balance as of the head it appends at, and runs again if another
	// writer got there first.
	withdraw := func(id string, amount int64) error {
		_, err := accounts.AppendFunc(ctx, "acct-7", func(head *eventstream.Head) ([]*AccountEvent, *eventstream.AppendOptions, error) {
			balance := int64(0)
			// The events up to the head and none after it, in one request.
			for e, err := range accounts.Read(ctx, "acct-7", 1, &eventstream.ReadOptions{AsOf: head}) {
				if err != nil {
					return nil, nil, err
				}
				switch e.Kind {
				case "deposited":
					balance += e.Amount
				case "withdrew":
					balance -= e.Amount
				}
			}
			if balance < amount {
				// A refused command is an error, and AppendFunc returns it
				// as it is. (table.ErrNoChange is for a command with
				// nothing to write, such as one already applied.)
				return nil, nil, fmt.Errorf("withdraw %d from a balance of %d: %w", amount, balance, ErrInsufficientFunds)
			}
			return []*AccountEvent{{Event: eventstream.Event{ID: id}, Kind: "withdrew", Amount: amount}}, nil, nil
		}, nil)
		return err
	}
	_, _ = accounts.Append(ctx, eventstream.NewHead("acct-7"), []*AccountEvent{{Kind: "deposited", Amount: 50}}, nil)
	for _, w := range []struct {
		id     string
		amount int64
	}{{"w1", 30}, {"w2", 30}, {"w3", 20}} {
		svc.ResetCounts()
		err := withdraw(w.id, w.amount)
		fmt.Printf("%s: %v (refused: %v) after %d requests\n", w.id, err, errors.Is(err, ErrInsufficientFunds), svc.Total())
	}
	head, _ := accounts.Open(ctx, "acct-7", nil)
	fmt.Println("version", head.Version())
	// Output:
	// w1: <nil> (refused: false) after 3 requests
	// w2: withdraw 30 from a balance of 20: insufficient funds (refused: true) after 2 requests
	// w3: <nil> (refused: false) after 3 requests
	// version 3
}
