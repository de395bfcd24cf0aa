package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestKL runs kl status, history, query and version against a running kld
// (--server) and on its database (--database), after a tofu apply.
func TestKL(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		backend := srv.Backend("example")
		wd := tofu.NewWorkdir(t, backend+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		wd.WriteFile("main.tf", backend+smallConfig("v2"))
		wd.Must("apply", "-auto-approve", "-no-color")
		lineage := parseState(t, getState(t, srv, "example")).Lineage

		const query = "SELECT type, COUNT(*) FROM resources GROUP BY type ORDER BY 2 DESC"
		queries := map[string]string{}
		for _, mode := range []struct{ name, flag, value string }{
			{"server", "--server", srv.URL},
			{"database", "--database", databaseURL},
		} {
			t.Run(mode.name, func(t *testing.T) {
				out := mustKL(t, mode.flag, mode.value, "status", "example")
				for _, want := range []string{"example", lineage, "6"} {
					if !strings.Contains(out, want) {
						t.Errorf("kl status does not show %q:\n%s", want, out)
					}
				}

				out = mustKL(t, mode.flag, mode.value, "history", "example")
				if lines := strings.Count(strings.TrimSpace(out), "\n"); lines != 2 {
					t.Errorf("kl history: want a header and 2 versions:\n%s", out)
				}
				out = mustKL(t, mode.flag, mode.value, "history", "example", "--json")
				var h struct {
					Versions []historyVersion `json:"versions"`
				}
				if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Versions) != 2 {
					t.Errorf("kl history --json: %v, want 2 versions:\n%s", err, out)
				} else if h.Versions[0].Number != 2 || h.Versions[0].Lineage != lineage {
					t.Errorf("kl history --json: newest is %+v, want number 2 of lineage %s", h.Versions[0], lineage)
				}

				out = mustKL(t, mode.flag, mode.value, "query", query)
				if !strings.Contains(out, "terraform_data") || !strings.Contains(out, "6") {
					t.Errorf("kl query %q:\n%s", query, out)
				}
				queries[mode.name] = out

				out = mustKL(t, mode.flag, mode.value, "version", "--json")
				var v struct {
					Client struct {
						Version string `json:"version"`
					} `json:"client"`
					Server *struct {
						Version string `json:"version"`
					} `json:"server"`
				}
				if err := json.Unmarshal([]byte(out), &v); err != nil || v.Client.Version == "" {
					t.Errorf("kl version --json: %v, no client version:\n%s", err, out)
				}
				if mode.name == "server" && (v.Server == nil || v.Server.Version != v.Client.Version) {
					t.Errorf("kl version --json against kld: want the server's version, equal to kl's (same build):\n%s", out)
				}
			})
		}
		if queries["server"] != queries["database"] {
			t.Errorf("kl query answers differently through kld and on the database:\n%s\nvs\n%s", queries["server"], queries["database"])
		}

		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if code, body := request(t, http.MethodGet, srv.URL+path, nil); code != http.StatusOK || len(body) == 0 {
				t.Errorf("GET %s: %d %.200s", path, code, body)
			}
		}
		code, body := request(t, http.MethodGet, srv.URL+"/versionz", nil)
		var v map[string]any
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil || v["version"] == nil {
			t.Errorf("GET /versionz: %d %s, want 200 with JSON holding a version", code, body)
		}
	})
}

// TestKLEscapesClientText: a lock whose Who and Info carry terminal
// escapes (set the title, clear the screen, write the clipboard with OSC
// 52), taken by any client, reaches the terminal escaped through kl
// status, kl states, and kl apply reporting the CLI's lock error; kl
// status --json still holds the very text.
func TestKLEscapesClientText(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		const who = "mallory\x1b]0;pwned\x07\x1b[2J\x1b]52;c;Y3VybCBldmls\x07"
		info, _ := json.Marshal(map[string]string{
			"ID": "0d4f2a8e-esc", "Operation": "OperationTypeApply", "Who": who,
			"Info": "\x1b[31mred\x1b[0m\rhidden", "Version": "1.10.10", "Created": "2026-12-03T10:00:00Z",
		})
		if code, body := request(t, "LOCK", srv.StateURL("esc"), info); code != http.StatusOK {
			t.Fatalf("LOCK: %d %s", code, body)
		}
		const shown = `mallory\u001b]0;pwned\u0007\u001b[2J`
		for _, args := range [][]string{{"status", "esc"}, {"states"}} {
			out, errOut, code := kl(t, append([]string{"--server", srv.URL}, args...)...)
			if code != 0 || strings.ContainsAny(out+errOut, "\x1b\x07\r") || !strings.Contains(out, shown) {
				t.Errorf("kl %s: exit %d, want the lock's Who escaped:\n%q\n%s", strings.Join(args, " "), code, out, errOut)
			}
		}
		out := mustKL(t, "--server", srv.URL, "status", "esc", "--json")
		var st struct {
			Locks []struct {
				Info struct{ Who string } `json:"info"`
			} `json:"locks"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Locks) != 1 || st.Locks[0].Info.Who != who {
			t.Errorf("kl status --json: %v, want the Who as sent:\n%q", err, out)
		}

		wd := tofu.NewWorkdir(t, srv.Backend("esc")+dirConfig)
		wd.Must("init", "-no-color")
		r := startKL(t, wd, "apply")
		if code := r.wait(); code != 8 || strings.ContainsAny(r.output(), "\x1b\x07\r") || !strings.Contains(r.err.String(), shown) {
			t.Errorf("kl apply on a state the hostile lock holds: exit %d, want 8 with the CLI's lock error escaped:\n%q", code, r.output())
		}
	})
}
