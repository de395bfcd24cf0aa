// Package reserve decides which addresses of a state an orchestrated
// apply may touch while others work on the same state: read and write
// reservations on addresses and patterns, the conflicts between them, the
// reservations a plan needs, and waiting for them with live feedback.
//
// # Basics
//
// A Pattern names a set of addresses: one instance, a resource with all
// its instances, a module with everything in it (`module.net.*`), an
// output, or everything (`*`). Two reservations conflict when their
// patterns intersect and at least one of them writes; reads never
// conflict with reads. An Index finds the holds a pattern meets in time
// proportional to what it meets, so checking thousands of reservations
// against thousands of held ones stays cheap.
//
//	held := reserve.NewIndex([]reserve.Hold{{
//		Reservation: reserve.Reservation{Pattern: reserve.MustParse("time_sleep.slow_a"), Mode: reserve.Write},
//		Run:         "run_7c3a91d2e4", Holder: "alice@laptop",
//	}})
//	blockers := held.Blockers(wanted, "run_mine")
//
// Analyze reads a plan (terraform-json, from `tofu show -json`) into what
// it writes and reads and the reservations that cover it; a Spec is that,
// saved by `kl plan` for `kl apply --orchestrated`. Wait retries an
// acquisition and prints who is in the way until it succeeds or its
// budget runs out.
//
// # Caveats
//
// The package decides; it stores nothing. Taking reservations
// all-or-nothing, leases and their expiry live in the Store's
// transaction (see the kilolock package), so several kld replicas agree.
//
// What a plan reads is taken from the references of the written
// resources' arguments, followed through module input variables, and from
// the dependencies the prior state records. References through locals are
// not visible in a JSON plan; the prior state's dependencies cover them
// for resources that already exist.
package reserve
