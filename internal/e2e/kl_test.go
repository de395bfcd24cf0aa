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
