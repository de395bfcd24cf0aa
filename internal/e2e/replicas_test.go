package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
)

// roundConfig has one resource whose input is the variable round, so every
// apply with a new round writes a version.
const roundConfig = `
variable "round" {
  type = number
}

resource "terraform_data" "r" {
  count = 3
  input = "round-${var.round}-${count.index}"
}

output "round" {
  value = var.round
}
`

// TestTwoServersOnePostgres runs two kld replicas on one PostgreSQL
// database: a lock taken through one holds on the other, and applies
// through both, alternating and at once, all land.
func TestTwoServersOnePostgres(t *testing.T) {
	t.Parallel()
	tofu.Binary(t)
	databaseURL := testpg.URL(t)
	a := tofu.StartKLD(t, databaseURL)
	b := tofu.StartKLD(t, databaseURL)

	l := newLock("alice@replica-a")
	if code, body := lock(t, a, "example", l); code != http.StatusOK {
		t.Fatalf("LOCK on a: %d %s", code, body)
	}
	code, body := lock(t, b, "example", newLock("bob@replica-b"))
	if code != http.StatusLocked {
		t.Errorf("LOCK on b while a holds the lock: %d %s, want 423", code, body)
	} else {
		var holder lockInfo
		if err := json.Unmarshal(body, &holder); err != nil || holder.ID != l.ID {
			t.Errorf("423 from b does not name a's holder %s: %s", l.ID, body)
		}
	}
	if code, body := unlock(t, b, "example", l); code != http.StatusOK {
		t.Fatalf("UNLOCK through b of the lock taken on a: %d %s", code, body)
	}

	wdA := tofu.NewWorkdir(t, a.Backend("example")+roundConfig)
	wdB := tofu.NewWorkdir(t, b.Backend("example")+roundConfig)
	wdA.Must("init", "-no-color")
	wdB.Must("init", "-no-color")

	const alternating = 6
	timed(t, fmt.Sprintf("%d applies alternating between two replicas", alternating), func() {
		for i := 1; i <= alternating; i++ {
			wd := wdA
			if i%2 == 0 {
				wd = wdB
			}
			wd.Must("apply", "-auto-approve", "-no-color", fmt.Sprintf("-var=round=%d", i))
		}
	})
	h := history(t, a, "example")
	if len(h) != alternating {
		t.Fatalf("history has %d versions after %d applies, want %d", len(h), alternating, alternating)
	}
	if out := wdB.Must("output", "-raw", "round"); out != fmt.Sprint(alternating) {
		t.Errorf("round through b = %q, want %d", out, alternating)
	}

	// Two applies at once, one through each replica: the second waits for
	// the first's lock, then applies on top of it.
	var wg sync.WaitGroup
	errs := make([]string, 2)
	timed(t, "2 concurrent applies through two replicas", func() {
		for i, wd := range []*tofu.Workdir{wdA, wdB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stdout, stderr, code := wd.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=2m", fmt.Sprintf("-var=round=%d", 100+i))
				if code != 0 {
					errs[i] = fmt.Sprintf("apply through replica %d: exit %d\n%s\n%s", i, code, stdout, stderr)
				}
			}()
		}
		wg.Wait()
	})
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	h = history(t, b, "example")
	if len(h) != alternating+2 {
		t.Errorf("history has %d versions after %d applies, want %d", len(h), alternating+2, alternating+2)
	}
	for i := 1; i < len(h); i++ {
		if h[i-1].Number != h[i].Number+1 || h[i-1].Serial <= h[i].Serial {
			t.Errorf("history is not one unbroken line: version %d serial %d follows version %d serial %d", h[i-1].Number, h[i-1].Serial, h[i].Number, h[i].Serial)
		}
	}
	if out := wdA.Must("output", "-raw", "round"); out != "100" && out != "101" {
		t.Errorf("round after the concurrent applies = %q, want 100 or 101", out)
	}
	if !strings.Contains(wdA.Must("state", "pull"), "round-10") {
		t.Errorf("state has no instance of the last round")
	}
}
