package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestForceUnlock: a lock left behind (a crashed run) blocks tofu until
// `tofu force-unlock -force ID` removes it.
func TestForceUnlock(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		backend := srv.Backend("example")
		wd := tofu.NewWorkdir(t, backend+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		left := newLock("crashed-run@ci-runner-7")
		if code, body := lock(t, srv, "example", left); code != http.StatusOK {
			t.Fatalf("LOCK: %d %s", code, body)
		}
		wd.WriteFile("main.tf", backend+smallConfig("v2"))
		stdout, stderr, code := wd.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
		if code == 0 {
			t.Fatalf("apply ran although the state is locked:\n%s", stdout)
		}
		if !strings.Contains(stderr, left.ID) {
			t.Errorf("apply on a locked state does not show the lock id %s:\n%s", left.ID, stderr)
		}

		var out string
		timed(t, "force-unlock", func() { out = wd.Must("force-unlock", "-force", left.ID) })
		if !strings.Contains(out, "successfully unlocked") {
			t.Errorf("force-unlock:\n%s", out)
		}
		out = wd.Must("apply", "-auto-approve", "-no-color")
		if !strings.Contains(out, "Apply complete!") {
			t.Errorf("apply after force-unlock:\n%s", out)
		}
		// The holder of the removed lock cannot unlock it any more, and
		// nothing is left locked.
		if code, body := lock(t, srv, "example", newLock("after@e2e")); code != http.StatusOK {
			t.Errorf("LOCK after force-unlock and apply: %d %s", code, body)
		}
	})
}

// TestLockTimeout: a held lock makes apply wait -lock-timeout and fail
// naming the holder; with a longer timeout it succeeds once the holder
// unlocks.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		backend := srv.Backend("example")
		wd := tofu.NewWorkdir(t, backend+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		holder := newLock("alice@build-host-3")
		if code, body := lock(t, srv, "example", holder); code != http.StatusOK {
			t.Fatalf("LOCK: %d %s", code, body)
		}
		// A second LOCK answers 423 with the holder's lock info.
		code, body := lock(t, srv, "example", newLock("bob@laptop"))
		if code != http.StatusLocked {
			t.Errorf("LOCK on a held state: %d %s, want 423", code, body)
		} else {
			var got lockInfo
			if err := json.Unmarshal(body, &got); err != nil || got.ID != holder.ID || got.Who != holder.Who {
				t.Errorf("423 body is not the holder's lock info (%v): %s", err, body)
			}
		}

		wd.WriteFile("main.tf", backend+smallConfig("v2"))
		var stdout, stderr string
		timed(t, "apply -lock-timeout=2s (held)", func() {
			stdout, stderr, code = wd.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=2s")
		})
		if code == 0 {
			t.Fatalf("apply ran although the state is locked:\n%s", stdout)
		}
		for _, want := range []string{"Error acquiring the state lock", holder.ID, holder.Who} {
			if !strings.Contains(stderr, want) {
				t.Errorf("apply stderr does not show %q:\n%s", want, stderr)
			}
		}

		// The holder lets go 3s into a 2-minute wait.
		type result struct {
			stdout, stderr string
			code           int
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			o, e, c := wd.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=2m")
			done <- result{o, e, c}
		}()
		time.Sleep(3 * time.Second)
		if code, body := unlock(t, srv, "example", holder); code != http.StatusOK {
			t.Errorf("UNLOCK by the holder: %d %s", code, body)
		}
		r := <-done
		t.Logf("TIMING %s apply -lock-timeout=2m, holder unlocks at 3s: %s", t.Name(), time.Since(start).Round(time.Millisecond))
		if r.code != 0 {
			t.Fatalf("apply waiting for the lock: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "Apply complete! Resources: 0 added, 6 changed, 0 destroyed.") {
			t.Errorf("apply waiting for the lock:\n%s", r.stdout)
		}
	})
}
