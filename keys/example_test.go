package keys_test

import (
	"fmt"
	"time"

	"github.com/tablekit/tablekit/keys"
)

func ExampleCompound() {
	var c keys.Compound // the zero value joins with "_"
	k, _ := c.Join("000123", "2012")
	fmt.Println(k, c.Split(k))
	_, err := c.Join("a_b", "c")
	fmt.Println(err != nil)
	// Output:
	// 000123_2012 [000123 2012]
	// true
}

func ExampleEncodeTuple() {
	k, _ := keys.EncodeTuple("Sales", "O'Brien/1")
	back, _ := keys.DecodeTuple(k)
	fmt.Println(k, back)
	// Output: Sales!O&1Brien.11! [Sales O'Brien/1]
}

func ExampleInvertedTicks() {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	k := keys.InvertedTicks(at)
	back, _ := keys.ParseInvertedTicks(k)
	fmt.Println(k, back)
	// Output: 2516070455999999999 2026-11-21 10:00:00 +0000 UTC
}

func ExamplePeriodTable() {
	at := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	today, _ := keys.PeriodTable("Logins", keys.Daily, at, 0)
	again, _ := keys.PeriodTable("Logins", keys.Daily, at, 1)
	fmt.Println(today, again)
	// Output: Logins20261121 Logins20261121g001
}
