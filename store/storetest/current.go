package storetest

import (
	"context"
	"testing"

	"github.com/kilolock/kilolock"
)

// testCurrentVersion: the cheap read every GET makes agrees with State, and
// with the version a commit returned, before and after writes.
func testCurrentVersion(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if _, _, err := s.CurrentVersion(ctx, "missing"); err == nil {
		t.Fatal("CurrentVersion of a missing state: nil error, want ErrNotFound")
	} else {
		errorIs(t, err, kilolock.ErrNotFound)
	}
	lock(t, s, "cur", "L1", kilolock.LockExclusive)
	id, n, err := s.CurrentVersion(ctx, "cur")
	if err != nil || id != 0 || n != 0 {
		t.Fatalf("CurrentVersion before a write = %d, %d, %v; want 0, 0, nil", id, n, err)
	}
	for i := 0; i < 3; i++ {
		c := next(t, s, "cur")
		c.LockID = "L1"
		c.Upserts = append(c.Upserts, instance(t, resource("terraform_data", "x"), intKey(int64(i)), `{"id":"x"}`))
		v := commit(t, s, "cur", c)
		id, n, err := s.CurrentVersion(ctx, "cur")
		if err != nil || id != v.ID || n != v.Number {
			t.Fatalf("CurrentVersion after commit %d = %d, %d, %v; want %d, %d", i+1, id, n, err, v.ID, v.Number)
		}
		if st := state(t, s, "cur"); st.CurrentID != id || st.Current != n {
			t.Fatalf("State says %d/%d, CurrentVersion %d/%d", st.CurrentID, st.Current, id, n)
		}
	}
}
