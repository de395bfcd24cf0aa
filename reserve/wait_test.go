package reserve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock that only moves when the waiter sleeps.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	return nil
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		4 * time.Second: "4s", 10 * time.Second: "10s", 2 * time.Minute: "2m", 90 * time.Second: "1m30s",
		time.Hour: "1h", 0: "0s", 14*time.Minute + 23*time.Second: "14m23s",
	} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestWaitFeedback(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	slowA := Blocker{
		Hold:   Hold{Reservation: Reservation{MustParse("time_sleep.slow_a"), Write}, Run: "run_7c3a91d2e4", Holder: "alice@laptop", Expires: clock.t.Add(14*time.Minute + 27*time.Second)},
		Wanted: Reservation{MustParse("time_sleep.slow_a"), Write},
	}
	other := Blocker{
		Hold:   Hold{Reservation: Reservation{Pattern: MustParse("*"), Mode: Write}, LockID: "f6f3debf", Holder: "bob@ci", Operation: "OperationTypeApply"},
		Wanted: slowA.Wanted,
	}
	// Blocked by A for 3 attempts, then by A and a plain lock for 4, then free.
	calls := 0
	attempt := func(context.Context) ([]Blocker, error) {
		calls++
		switch {
		case calls <= 3:
			return []Blocker{slowA}, nil
		case calls <= 7:
			return []Blocker{slowA, other, slowA}, nil
		}
		return nil, nil
	}
	var out strings.Builder
	err := Wait(context.Background(), attempt, WaitOptions{
		State: "big-state", Timeout: 2 * time.Minute, Out: &out, Now: clock.now, Sleep: clock.sleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := `[apply: waiting 0s/2m] blocked by 1 reservation(s) on "big-state":
  time_sleep.slow_a  write  held by alice@laptop (apply 7c3a91…, lease 14m27s)
  retrying in 2s
[apply: waiting 6s/2m] blocked by 2 reservation(s) on "big-state":
  time_sleep.slow_a  write  held by alice@laptop (apply 7c3a91…, lease 14m21s)
  *                  write  held by bob@ci (a plain apply, lock id f6f3debf)
  retrying in 2s
[apply: waiting 12s/2m] blocked by 2 reservation(s) on "big-state":
  time_sleep.slow_a  write  held by alice@laptop (apply 7c3a91…, lease 14m15s)
  *                  write  held by bob@ci (a plain apply, lock id f6f3debf)
  retrying in 2s
[apply: waited 14s] reservation conflict cleared
`
	// At 0s the first block; at 6s the set changed; at 12s 5 s of the same.
	if got != want {
		t.Errorf("feedback:\n%s\nwant:\n%s", got, want)
	}
}

func TestWaitTimeout(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	b := Blocker{Hold: Hold{Reservation: Reservation{MustParse("time_sleep.slow_a"), Write}, Run: "run_7c3a91d2e4", Holder: "alice@laptop", Expires: clock.t.Add(time.Hour)}}
	attempts := 0
	attempt := func(context.Context) ([]Blocker, error) { attempts++; return []Blocker{b}, nil }

	t.Run("zero fails at once", func(t *testing.T) {
		var out strings.Builder
		err := Wait(context.Background(), attempt, WaitOptions{State: "s", Out: &out, Now: clock.now, Sleep: clock.sleep})
		var be *BlockedError
		if !errors.As(err, &be) || attempts != 1 {
			t.Fatalf("err = %v after %d attempts", err, attempts)
		}
		if !strings.Contains(be.Error(), "time_sleep.slow_a write held by alice@laptop (apply 7c3a91…") {
			t.Errorf("error does not name the holder: %v", be)
		}
		if !strings.Contains(be.Hint(), "kl apply abort --apply-id run_7c3a91d2e4") {
			t.Errorf("hint: %s", be.Hint())
		}
		if out.Len() != 0 {
			t.Errorf("printed a wait block without waiting: %q", out.String())
		}
	})
	t.Run("budget runs out", func(t *testing.T) {
		attempts = 0
		start := clock.t
		err := Wait(context.Background(), attempt, WaitOptions{State: "s", Timeout: 7 * time.Second, Now: clock.now, Sleep: clock.sleep})
		var be *BlockedError
		if !errors.As(err, &be) {
			t.Fatalf("err = %v", err)
		}
		// 0, 2, 4, 6, then a last pause of 1 s up to the budget.
		if attempts != 5 || clock.t.Sub(start) != 7*time.Second {
			t.Errorf("%d attempts over %s", attempts, clock.t.Sub(start))
		}
		if !strings.Contains(be.Error(), "after waiting 7s") {
			t.Errorf("error: %v", be)
		}
	})
	t.Run("attempt error ends the wait", func(t *testing.T) {
		boom := errors.New("run aborted")
		err := Wait(context.Background(), func(context.Context) ([]Blocker, error) { return nil, boom }, WaitOptions{Timeout: time.Minute, Now: clock.now, Sleep: clock.sleep})
		if !errors.Is(err, boom) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := Wait(ctx, attempt, WaitOptions{Timeout: time.Minute})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
	})
}
