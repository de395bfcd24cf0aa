package httpbackend

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlite"
)

// forged is a value that would forge a log line if it were written as it
// is.
const forged = "x\nERRO panic serving request request_id=0 \r\nERRO panic serving request\x1b[2K\x00"

// TestLogOneLinePerEntry: a client's values holding newlines (a LockInfo's
// ID and Who, a lock id in the query, a path) are logged, by the handler
// and the engine, each entry on one line, in every format.
func TestLogOneLinePerEntry(t *testing.T) {
	for _, tt := range []struct {
		name   string
		format log.Formatter
		start  *regexp.Regexp // how every line starts
	}{
		{"text", log.TextFormatter, regexp.MustCompile(`^\d{4}-\d\d-\d\dT`)},
		{"logfmt", log.LogfmtFormatter, regexp.MustCompile(`^time=`)},
		{"json", log.JSONFormatter, regexp.MustCompile(`^\{"time":`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out syncBuffer
			logger := NewLogger(&out, log.Options{Level: log.DebugLevel, ReportTimestamp: true, TimeFormat: time.RFC3339, Formatter: tt.format})
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			env := &testEnv{t: t, h: New(kilolock.NewEngine(st, kilolock.Options{Logger: logger}), Options{Logger: logger}), store: st}

			holder := lockInfo(forged, forged)
			env.lock("s", holder)
			if w := env.do("LOCK", "/v1/states/s", mustJSON(t, lockInfo("other", "bob"))); w.Code != 423 {
				t.Fatalf("second LOCK = %d", w.Code)
			}
			if w := env.do("POST", "/v1/states/s?ID=x%0AERRO%20panic", stateDoc(t, "l", 1, nil)); w.Code != 409 {
				t.Fatalf("POST with another lock id = %d %s", w.Code, w.Body)
			}
			if w := env.do("GET", "/v1/states/a%0AERRO%20panic%20serving%20request", nil); w.Code != 400 {
				t.Fatalf("GET of a name with a newline = %d", w.Code)
			}
			// A forced unlock: the engine logs the holder's Who.
			if w := env.do("UNLOCK", "/v1/states/s", mustJSON(t, map[string]string{"ID": forged})); w.Code != 200 {
				t.Fatalf("force-unlock = %d %s", w.Code, w.Body)
			}

			logs := out.String()
			if !strings.Contains(logs, "forced unlock") {
				t.Fatalf("the engine's forced unlock was not logged:\n%s", logs)
			}
			lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
			for _, line := range lines {
				if !tt.start.MatchString(line) {
					t.Errorf("a line that is not an entry of its own: %q", line)
				}
				if strings.IndexFunc(line, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
					t.Errorf("a control character is written as it is: %q", line)
				}
				if tt.format == log.JSONFormatter && !json.Valid([]byte(line)) {
					t.Errorf("not one JSON object: %q", line)
				}
			}
			if t.Failed() {
				t.Logf("log:\n%s", logs)
			}
		})
	}
}
