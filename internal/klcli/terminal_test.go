package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/klcli"
)

// hostileWho is a lock's Who that, printed raw, sets the terminal's
// title, clears its screen and writes its clipboard (OSC 52).
const hostileWho = "mallory\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmls\x07"

// TestCommandsEscapeWhatClientsSent: kl status and kl states print a
// lock's Who and Info, sent by any client, with their control characters
// escaped, through the output every command writes to; --json stays JSON
// holding the very text.
func TestCommandsEscapeWhatClientsSent(t *testing.T) {
	ctx := context.Background()
	url := sqliteURL(t)
	e := openEngine(t, url)
	info := lockInfo(hostileWho, "lock-esc")
	info.Info = "run \x1b[31mred\x1b[0m\rhidden"
	if _, err := e.Lock(ctx, "hostile", info); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, cmd interface {
		Run(context.Context, *klcli.Globals) error
	}) string {
		t.Helper()
		var out bytes.Buffer
		if err := cmd.Run(ctx, &klcli.Globals{Database: url, Out: &out}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	status := &klcli.StatusCmd{}
	status.Name = "hostile"
	for name, cmd := range map[string]interface {
		Run(context.Context, *klcli.Globals) error
	}{
		"status": status,
		"states": &klcli.StatesCmd{},
	} {
		t.Run(name, func(t *testing.T) {
			out := run(t, cmd)
			if strings.ContainsAny(out, "\x1b\x07\r") {
				t.Fatalf("kl %s printed control characters:\n%q", name, out)
			}
			if !strings.Contains(out, `mallory\u001b]0;pwned\u0007\u001b[2J`) {
				t.Errorf("kl %s does not show the escaped Who:\n%s", name, out)
			}
		})
	}
	t.Run("status --json", func(t *testing.T) {
		c := &klcli.StatusCmd{}
		c.Name = "hostile"
		c.JSON = true
		out := run(t, c)
		var s kilolock.Status
		if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Locks) != 1 || s.Locks[0].Info.Who != hostileWho {
			t.Fatalf("kl status --json: %v, want the lock's Who as sent:\n%s", err, out)
		}
		if strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("kl status --json printed control characters:\n%q", out)
		}
	})
}
