package quota_test

import (
	"fmt"

	"github.com/kilolock/kilolock/quota"
)

func ExampleCheck() {
	limit := quota.Limit{Soft: 80, Hard: 100}
	for _, delta := range []int64{+2, +3} {
		v := quota.Check(quota.ScopeState, "network", 98, delta, limit)
		fmt.Println(v.Level, v.Message())
	}
	// Output:
	// warn state network: 100 managed instance(s) is above the soft limit of 80 (hard 100, 0 left)
	// exceed state network: 101 managed instance(s) would exceed the hard limit of 100 (soft 80)
}
