package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestLogLinesCannotBeForged locks a state with a LockInfo whose ID and Who
// hold a forged log line, then force-unlocks it: kld's text log and JSON
// log keep every entry on one line, so the forged "ERRO panic serving
// request" never starts a line. No tofu runs: a client forges it by hand.
func TestLogLinesCannotBeForged(t *testing.T) {
	t.Parallel()
	const forged = "x\nERRO panic serving request request_id=0\r\nERRO panic serving request"
	for _, tt := range []struct {
		format string
		entry  *regexp.Regexp
	}{
		{"text", regexp.MustCompile(`^\d{4}-\d\d-\d\dT\S+ (DEBU|INFO|WARN|ERRO) `)},
		{"json", regexp.MustCompile(`^\{.*\}$`)},
	} {
		t.Run(tt.format, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, filepath.Join(t.TempDir(), "kilolock.db"), "--log-format="+tt.format)
			l := newLock(forged)
			l.ID = forged
			if code, body := lock(t, srv, "forged", l); code != http.StatusOK {
				t.Fatalf("LOCK = %d %s", code, body)
			}
			force, _ := json.Marshal(map[string]string{"ID": forged})
			if code, body := request(t, "UNLOCK", srv.StateURL("forged"), force); code != http.StatusOK {
				t.Fatalf("force-unlock = %d %s", code, body)
			}
			if code, _ := request(t, http.MethodGet, srv.URL+"/v1/states/a%0AERRO%20panic%20serving%20request", nil); code != http.StatusBadRequest {
				t.Fatalf("GET of a name with a newline = %d", code)
			}
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			logs := srv.Log()
			if !strings.Contains(logs, "forced unlock") {
				t.Fatalf("kld did not log the forced unlock:\n%s", logs)
			}
			for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
				if strings.HasPrefix(line, "http://127.0.0.1:") {
					continue // the URL printed on stdout for port 0
				}
				if !tt.entry.MatchString(line) {
					t.Errorf("a line that is not an entry of its own: %q", line)
				}
				if tt.format == "json" && !json.Valid([]byte(line)) {
					t.Errorf("not one JSON object: %q", line)
				}
			}
		})
	}
}
