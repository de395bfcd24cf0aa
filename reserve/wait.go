package reserve

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Attempt tries once to take reservations. It returns no blockers and no
// error when it took them, the blockers when something stood in the way
// (and then took nothing), or an error that ends the wait.
type Attempt func(ctx context.Context) ([]Blocker, error)

// WaitOptions configure Wait. The zero value fails at once when blocked
// and prints nothing.
type WaitOptions struct {
	// State names the state in messages.
	State string
	// Timeout is how long to keep trying; 0 fails at the first refusal.
	Timeout time.Duration
	// Retry is the pause between attempts (2 s when 0).
	Retry time.Duration
	// Refresh is how often the wait block is printed again while nothing
	// changes (5 s when 0); it is printed at once when the blockers change.
	Refresh time.Duration
	// Out receives the wait feedback; nil prints nothing.
	Out io.Writer
	// Label prefixes each line: "[LABEL: waiting 4s/2m]" ("apply" when "").
	Label string
	// Now and Sleep are the clock; nil means the real one.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// BlockedError is the end of a wait that never got its reservations.
type BlockedError struct {
	State    string
	Blockers []Blocker
	Waited   time.Duration
	Timeout  time.Duration
	now      time.Time
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	holds := distinct(e.Blockers)
	fmt.Fprintf(&b, "blocked by %d reservation(s) on %q", len(holds), e.State)
	if e.Timeout > 0 {
		fmt.Fprintf(&b, " after waiting %s", e.Waited.Round(time.Second))
	}
	b.WriteString(": ")
	for i, h := range holds {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s %s", h.Pattern, h.Mode, h.Describe(e.now))
	}
	return b.String()
}

// Hint says how to clear what blocked the wait when it is stale.
func (e *BlockedError) Hint() string {
	var runs, locks []string
	for _, h := range distinct(e.Blockers) {
		switch {
		case h.Run != "" && !slices.Contains(runs, h.Run):
			runs = append(runs, h.Run)
		case h.Run == "" && h.LockID != "" && !slices.Contains(locks, h.LockID):
			locks = append(locks, h.LockID)
		}
	}
	var hints []string
	for _, r := range runs {
		hints = append(hints, "kl apply abort --apply-id "+r)
	}
	for _, l := range locks {
		hints = append(hints, fmt.Sprintf("tofu force-unlock %s (only if that run is gone)", l))
	}
	if len(hints) == 0 {
		return "wait for the holders to finish, or retry with a longer --wait-timeout"
	}
	return "wait for the holders to finish (a longer --wait-timeout), or, if one is stale, clear it: " + strings.Join(hints, "; ")
}

// distinct returns the holds of bs, each once, in order.
func distinct(bs []Blocker) []Blocker {
	seen := map[string]bool{}
	var out []Blocker
	for _, b := range bs {
		k := holdKey(b.Hold)
		if !seen[k] {
			seen[k] = true
			out = append(out, b)
		}
	}
	return out
}

func holdKey(h Hold) string {
	return h.Run + "\x00" + h.LockID + "\x00" + h.Pattern.String() + "\x00" + string(h.Mode)
}

// blockersKey identifies a set of blockers, whatever their order.
func blockersKey(bs []Blocker) string {
	var ks []string
	for _, b := range distinct(bs) {
		ks = append(ks, holdKey(b.Hold))
	}
	slices.Sort(ks)
	return strings.Join(ks, "\x01")
}

// Wait calls attempt until it succeeds, fails, ctx ends or the timeout
// runs out (then a *BlockedError naming the last blockers). While blocked
// it writes the wait block to opts.Out at once, again whenever the set of
// blockers changes and at least every opts.Refresh, and one line when the
// conflict clears.
func Wait(ctx context.Context, attempt Attempt, opts WaitOptions) error {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	retry, refresh, label := opts.Retry, opts.Refresh, opts.Label
	if retry <= 0 {
		retry = 2 * time.Second
	}
	if refresh <= 0 {
		refresh = 5 * time.Second
	}
	if label == "" {
		label = "apply"
	}
	start := now()
	var (
		lastKey     string
		lastPrinted time.Time
		blocked     bool
	)
	for {
		bs, err := attempt(ctx)
		if err != nil {
			return err
		}
		t := now()
		waited := t.Sub(start)
		if len(bs) == 0 {
			if blocked && opts.Out != nil {
				fmt.Fprintf(opts.Out, "[%s: waited %s] reservation conflict cleared\n", label, waited.Round(time.Second))
			}
			return nil
		}
		blocked = true
		left := opts.Timeout - waited
		if left <= 0 {
			return &BlockedError{State: opts.State, Blockers: bs, Waited: waited, Timeout: opts.Timeout, now: t}
		}
		pause := min(retry, left)
		if k := blockersKey(bs); opts.Out != nil && (k != lastKey || t.Sub(lastPrinted) >= refresh) {
			writeBlock(opts.Out, label, opts.State, bs, waited, opts.Timeout, pause, t)
			lastKey, lastPrinted = k, t
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
	}
}

// writeBlock prints the wait block:
//
//	[apply: waiting 4s/2m] blocked by 1 reservation(s) on "big-state":
//	  time_sleep.slow_a  write  held by alice@laptop (apply 7c3a91…, lease 14m23s)
//	  retrying in 2s
func writeBlock(w io.Writer, label, state string, bs []Blocker, waited, timeout, pause time.Duration, now time.Time) {
	holds := distinct(bs)
	var b strings.Builder
	fmt.Fprintf(&b, "[%s: waiting %s/%s] blocked by %d reservation(s) on %q:\n", label, short(waited), short(timeout), len(holds), state)
	width := 0
	for _, h := range holds {
		width = max(width, len(h.Pattern.String()))
	}
	for _, h := range holds {
		fmt.Fprintf(&b, "  %-*s  %-5s  %s\n", width, h.Pattern, h.Mode, h.Describe(now))
	}
	fmt.Fprintf(&b, "  retrying in %s\n", short(pause))
	io.WriteString(w, b.String())
}

// short prints a duration the way people write it: 4s, 2m, 1m30s, 1h.
func short(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
