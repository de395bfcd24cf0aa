package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// The refusals a program branches on arrive as the root's typed errors,
// with what they carry: the addresses of an optimistic conflict, a
// quota's figures, a run's blockers.
func TestErrorsAcrossTheWire(t *testing.T) {
	ctx := context.Background()
	c := inProcess(t, newKLD(t, httpbackend.Options{}))
	lock := func(id string) kilolock.LockInfo {
		return kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: id + "@test", Version: "1.9.0", Created: time.Now().UTC()}
	}

	t.Run("optimistic conflict", func(t *testing.T) {
		no := false
		if _, err := c.Configure(ctx, "opt", client.StateConfig{ExclusiveLocks: &no}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutState(ctx, "opt", "", twoResources(1, "base")); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"w1", "w2"} {
			if _, err := c.Lock(ctx, "opt", lock(id), ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.PutState(ctx, "opt", "w1", twoResources(2, "first")); err != nil {
			t.Fatal(err)
		}
		_, err := c.PutState(ctx, "opt", "w2", twoResources(2, "second"))
		var conflict *kilolock.ConflictError
		if !errors.Is(err, kilolock.ErrConflict) || !errors.As(err, &conflict) || conflict.Reason != kilolock.ReasonWriteConflict ||
			len(conflict.Addresses) == 0 || conflict.LatestSerial != 2 || conflict.Hint == "" {
			t.Fatalf("the second writer of the same address: %v (%#v), want a ConflictError naming it", err, conflict)
		}
	})

	t.Run("quota", func(t *testing.T) {
		if _, err := c.SetQuota(ctx, client.QuotaRequest{QuotaChange: tenancy.QuotaChange{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "small"}, Limit: &quota.Limit{Hard: 1}}}); err != nil {
			t.Fatal(err)
		}
		_, err := c.PutState(ctx, "small", "", twoResources(1, "x"))
		var qe *kilolock.QuotaError
		if !errors.Is(err, kilolock.ErrQuotaExceeded) || !errors.As(err, &qe) || qe.Refused.Limit.Hard != 1 || qe.Refused.Result != 2 || qe.Refused.Target != "small" {
			t.Fatalf("a write past the quota: %v (%#v), want a QuotaError of 2 past 1", err, qe)
		}
	})

	t.Run("reserved", func(t *testing.T) {
		if _, err := c.PutState(ctx, "runs", "", twoResources(1, "x")); err != nil {
			t.Fatal(err)
		}
		var rs []kilolock.Reservation
		if err := jsonInto(`[{"pattern":"terraform_data.b","mode":"write"}]`, &rs); err != nil {
			t.Fatal(err)
		}
		first, err := c.StartRun(ctx, "runs", client.RunRequest{Actor: "alice", Reservations: rs, SourceSerial: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AcquireRun(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		second, err := c.StartRun(ctx, "runs", client.RunRequest{Actor: "bob", Reservations: rs, SourceSerial: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.AcquireRun(ctx, second.ID)
		var reserved *kilolock.ReservedError
		if !errors.Is(err, kilolock.ErrLocked) || !errors.As(err, &reserved) || len(reserved.Blockers) != 1 || reserved.Blockers[0].Run != first.ID {
			t.Fatalf("a run blocked by another: %v (%#v), want a ReservedError naming %s", err, reserved, first.ID)
		}
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusLocked || !strings.Contains(ce.Hint(), first.ID) {
			t.Fatalf("the 423's hint: %#v, want it to name the run to wait for or abort", ce)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		_, err := c.Diff(ctx, "runs", "@@1", "")
		var invalid *kilolock.InvalidError
		if !errors.Is(err, kilolock.ErrInvalid) || !errors.As(err, &invalid) || invalid.Code == "" || invalid.Hint == "" {
			t.Fatalf("a malformed version reference: %v (%#v), want an InvalidError with its code and hint", err, invalid)
		}
	})
}
