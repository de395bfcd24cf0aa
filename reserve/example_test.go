package reserve_test

import (
	"fmt"

	"github.com/kilolock/kilolock/reserve"
)

func ExampleIndex_Blockers() {
	held := reserve.NewIndex([]reserve.Hold{
		{Reservation: reserve.Reservation{Pattern: reserve.MustParse("time_sleep.slow_a"), Mode: reserve.Write}, Run: "run_a", Holder: "alice@laptop"},
		{Reservation: reserve.Reservation{Pattern: reserve.MustParse("module.net.*"), Mode: reserve.Read}, Run: "run_b", Holder: "bob@ci"},
	})
	wanted := []reserve.Reservation{
		{Pattern: reserve.MustParse("time_sleep.slow_b"), Mode: reserve.Write},
		{Pattern: reserve.MustParse(`module.net["eu"].aws_vpc.main`), Mode: reserve.Read},
		{Pattern: reserve.MustParse("time_sleep.slow_a[0]"), Mode: reserve.Read},
	}
	for _, b := range held.Blockers(wanted, "") {
		fmt.Printf("%s is blocked by %s of %s\n", b.Wanted, b.Hold.Reservation, b.Holder)
	}
	// Output:
	// time_sleep.slow_a[0] (read) is blocked by time_sleep.slow_a (write) of alice@laptop
}
