package keyrules_test

import (
	"fmt"

	"github.com/tablekit/tablekit/internal/keyrules"
)

func ExamplePrefixRange() {
	lo, hi := keyrules.PrefixRange("empid_")
	fmt.Printf("RowKey ge %q and RowKey lt %q\n", lo, hi)
	// Output: RowKey ge "empid_" and RowKey lt "empid`"
}

func ExampleShardName() {
	n := 16
	name, _ := keyrules.ShardName("events", keyrules.ShardBucket("000123", n), n)
	fmt.Println(name)
	// Output: events_09
}
