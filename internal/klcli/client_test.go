package klcli_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
)

// fakeServer answers every request with status and body, and records the
// last request.
func fakeServer(t *testing.T, status int, body string) (*httptest.Server, *http.Request) {
	t.Helper()
	last := new(http.Request)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*last = *r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, last
}

func TestHTTPErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		code    int
		is      error
		message string
		hint    string
	}{
		{"not found", 404, `{"error":"state_not_found","message":"state \"x\" does not exist","hint":"list states with kl states"}`, klcli.ExitNotFound, kilolock.ErrNotFound, `state "x" does not exist`, "list states with kl states"},
		{"locked", 423, `{"error":"locked","message":"state is locked by carol","hint":"wait"}`, klcli.ExitConflict, kilolock.ErrLocked, "state is locked by carol", "wait"},
		{"conflict", 409, `{"error":"stale_serial","message":"serial 1 is below 3","hint":"pull"}`, klcli.ExitConflict, kilolock.ErrConflict, "serial 1 is below 3", "pull"},
		{"read-only", 403, `{"error":"read_only","message":"attempt to write a readonly database","hint":"only SELECT"}`, klcli.ExitError, kilolock.ErrReadOnly, "attempt to write a readonly database", "only SELECT"},
		{"bad input", 400, `{"error":"invalid_state_name","message":"bad name","hint":"use letters"}`, klcli.ExitUsage, kilolock.ErrInvalid, "bad name", "use letters"},
		{"unavailable", 503, `{"error":"database_unavailable","message":"database is down","hint":"retry"}`, klcli.ExitUnavailable, kilolock.ErrUnavailable, "database is down", "retry"},
		{"too many queries", 429, `{"error":"too_many_queries","message":"this credential already runs 2 queries at once","hint":"wait for one to end and retry in 5 seconds"}`, klcli.ExitUnavailable, kilolock.ErrUnavailable, "this credential already runs 2 queries at once", "retry in 5 seconds"},
		{"proxy text", 502, "<html>Bad Gateway</html>\nmore", klcli.ExitUnavailable, kilolock.ErrUnavailable, "server answered 502 Bad Gateway: <html>Bad Gateway</html>", ""},
		{"no credentials", 401, `not authorized`, klcli.ExitError, nil, "server answered 401 Unauthorized: not authorized", "KL_TOKEN"},
		{"internal", 500, `{"error":"internal","message":"boom"}`, klcli.ExitError, nil, "boom", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakeServer(t, tc.status, tc.body)
			b, err := klcli.NewConn(srv.URL, klcli.HTTPOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.API().Status(ctx, "x")
			var ae *client.Error
			if !errors.As(err, &ae) {
				t.Fatalf("err %T %v, want *client.Error", err, err)
			}
			if ae.Status != tc.status || ae.Body.Message != tc.message {
				t.Errorf("got %+v", ae)
			}
			if got := klcli.ExitCode(err); got != tc.code {
				t.Errorf("exit code %d, want %d", got, tc.code)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v is not %v", err, tc.is)
			}
			if !strings.Contains(klcli.Hint(err), tc.hint) {
				t.Errorf("hint %q, want it to contain %q", klcli.Hint(err), tc.hint)
			}
			var report strings.Builder
			klcli.Report(&report, err)
			want := "kl: " + tc.message + "\n"
			if h := klcli.Hint(err); h != "" {
				want += "hint: " + h + "\n"
			}
			if report.String() != want {
				t.Errorf("report %q, want %q", report.String(), want)
			}
		})
	}
}

func TestHTTPRequest(t *testing.T) {
	srv, last := fakeServer(t, 200, `{"versions":[]}`)
	b, err := klcli.NewConn(srv.URL+"/prefix/", klcli.HTTPOptions{Token: "t0k"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.API().History(context.Background(), "prod", client.HistoryOptions{Limit: 5, Before: 9})
	if vs := l.Versions; err != nil || vs == nil || len(vs) != 0 {
		t.Fatalf("history: %v, %v", l, err)
	}
	if got := last.URL.RequestURI(); got != "/prefix/v1/api/states/prod/versions?before=9&limit=5" {
		t.Errorf("request %s", got)
	}
	if got := last.Header.Get("Authorization"); got != "Bearer t0k" {
		t.Errorf("authorization %q", got)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	b, err := klcli.NewConn("http://"+addr, klcli.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.API().States(context.Background())
	if code := klcli.ExitCode(err); code != klcli.ExitUnavailable {
		t.Errorf("exit code %d for %v", code, err)
	}
	if !strings.Contains(klcli.Hint(err), "is kld running at http://"+addr) {
		t.Errorf("hint %q", klcli.Hint(err))
	}
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	b, err := klcli.NewConn(srv.URL, klcli.HTTPOptions{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.API().States(context.Background())
	if code := klcli.ExitCode(err); code != klcli.ExitUnavailable {
		t.Errorf("exit code %d for %v", code, err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	_, err := klcli.Open(ctx, klcli.Target{Server: "http://a", Database: "b.db"})
	if klcli.ExitCode(err) != klcli.ExitUsage {
		t.Errorf("server and database: %v", err)
	}
	for _, bad := range []string{"127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := klcli.Open(ctx, klcli.Target{Server: bad}); klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("server %q: %v", bad, err)
		}
	}
	if _, err := klcli.Open(ctx, klcli.Target{}); err != nil {
		t.Fatal(err)
	}
	// A database is served in-process, through the same API.
	b, err := klcli.Open(ctx, klcli.Target{Database: sqliteURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	if sts, err := states(b); err != nil || len(sts) != 0 {
		t.Errorf("states of an empty database: %v, %v", sts, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
