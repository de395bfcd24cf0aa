package kldconfig

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/store"
)

func parse(t *testing.T, args ...string) *Limits {
	t.Helper()
	var c struct {
		Limits Limits `embed:""`
	}
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return &c.Limits
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		limits  kilolock.QueryLimits
		holders int
	}{
		{"defaults", nil, nil, kilolock.QueryLimits{Timeout: 30 * time.Second, MaxRows: 10000, MaxBytes: 8 << 20}, 100},
		{"flags", []string{"--query-timeout=5s", "--query-max-rows=10", "--query-max-bytes=1MiB", "--max-lock-holders=3"}, nil,
			kilolock.QueryLimits{Timeout: 5 * time.Second, MaxRows: 10, MaxBytes: 1 << 20}, 3},
		{"environment", nil, map[string]string{"KL_QUERY_MAX_BYTES": "64KiB", "KL_MAX_LOCK_HOLDERS": "0"},
			kilolock.QueryLimits{Timeout: 30 * time.Second, MaxRows: 10000, MaxBytes: 64 << 10}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o := parse(t, tt.args...).Engine(kilolock.Options{DefaultLockMode: kilolock.LockOptimistic})
			if o.QueryLimits != tt.limits || o.MaxLockHolders != tt.holders || o.DefaultLockMode != kilolock.LockOptimistic {
				t.Errorf("Engine = %+v, want limits %+v and holders %d", o, tt.limits, tt.holders)
			}
		})
	}
}

// TestDefaultStateQuota: --default-state-quota (KL_DEFAULT_STATE_QUOTA)
// reads SOFT,HARD, HARD or unlimited, and refuses anything else at parse
// time.
func TestDefaultStateQuota(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want *quota.Limit
	}{
		{"none", nil, "", nil},
		{"soft and hard", []string{"--default-state-quota=80,100"}, "", &quota.Limit{Soft: 80, Hard: 100}},
		{"hard", []string{"--default-state-quota", "500"}, "", &quota.Limit{Hard: 500}},
		{"unlimited", []string{"--default-state-quota=unlimited"}, "", nil},
		{"environment", nil, "10,20", &quota.Limit{Soft: 10, Hard: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("KL_DEFAULT_STATE_QUOTA", tt.env)
			}
			got := parse(t, tt.args...).Engine(kilolock.Options{}).DefaultStateQuota
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("DefaultStateQuota = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"100,80", "0", "lots", "-1,5"} {
		var c struct {
			Limits Limits `embed:""`
		}
		parser, err := kong.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse([]string{"--default-state-quota=" + bad}); err == nil || !strings.Contains(err.Error(), "default-state-quota") {
			t.Errorf("--default-state-quota=%s: %v, want a refusal naming the flag", bad, err)
		}
	}
}

// A query URL is refused with a SQLite database, before it is opened.
func TestQueryURLNeedsPostgres(t *testing.T) {
	l := parse(t, "--query-database-url=postgres://reader@db/kilolock")
	path := filepath.Join(t.TempDir(), "kl.db")
	_, err := store.Open(context.Background(), path, l.StoreOptions()...)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "invalid_query_url" {
		t.Errorf("store.Open: %v, want invalid_query_url", err)
	}
	if len(parse(t).StoreOptions()) != 0 {
		t.Error("options without the flag")
	}
}

func TestServing(t *testing.T) {
	t.Run("auth", func(t *testing.T) {
		for auth, want := range map[string]httpbackend.AuthMode{"none": httpbackend.AuthNone, "token": httpbackend.AuthToken} {
			if got := (&Serving{Auth: auth}).AuthMode(); got != want {
				t.Errorf("--auth=%s: %q, want %q", auth, got, want)
			}
		}
	})
	t.Run("tls", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.pem")
		tests := []struct {
			name      string
			s         Serving
			wantErr   string
			wantNoTLS bool
		}{
			{"neither", Serving{}, "", true},
			{"cert only", Serving{TLSCert: missing}, "go together", false},
			{"key only", Serving{TLSKey: missing}, "go together", false},
			{"unreadable", Serving{TLSCert: missing, TLSKey: missing}, "--tls-cert and --tls-key:", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cfg, err := tt.s.TLSConfig()
				if tt.wantErr == "" && (err != nil || (cfg == nil) != tt.wantNoTLS) || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Errorf("TLSConfig() = %v, %v; want error %q", cfg, err, tt.wantErr)
				}
			})
		}
	})
	t.Run("redact", func(t *testing.T) {
		for in, want := range map[string]string{
			"postgres://kl:secret@db/kilolock": "postgres://kl:xxxxx@db/kilolock",
			"postgres://db/kilolock":           "postgres://db/kilolock",
			"./kilolock.db":                    "./kilolock.db",
			"sqlite:///var/lib/kl/kilolock.db": "sqlite:///var/lib/kl/kilolock.db",
			"postgres://kl:s%40cret@db/kl?x=1": "postgres://kl:xxxxx@db/kl?x=1",
		} {
			if got := Redact(in); got != want {
				t.Errorf("Redact(%q) = %q, want %q", in, got, want)
			}
		}
	})
}

// TestRetentionFlags: --retention-interval is off by default, takes a
// duration of at least a second, and --retention-batch 1 to 10000.
func TestRetentionFlags(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		interval time.Duration
		bad      string
	}{
		{nil, 0, ""},
		{[]string{"--retention-interval", "1h"}, time.Hour, ""},
		{[]string{"--retention-interval", "1s", "--retention-batch", "10000"}, time.Second, ""},
		{[]string{"--retention-interval", "10ms"}, 0, "at least 1s"},
		{[]string{"--retention-interval=-1h"}, 0, "at least 1s"},
		{[]string{"--retention-batch", "0"}, 0, "1 to 10000"},
		{[]string{"--retention-batch", "10001"}, 0, "1 to 10000"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var c struct {
				Retention Retention `embed:""`
			}
			parser, err := kong.New(&c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = parser.Parse(tt.args) // kong calls Validate
			switch {
			case tt.bad == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)):
				t.Errorf("Validate = %v, want an error saying %q", err, tt.bad)
			case tt.bad == "" && c.Retention.RetentionInterval != tt.interval:
				t.Errorf("interval %s, want %s", c.Retention.RetentionInterval, tt.interval)
			}
		})
	}
}

// TestEncryptionKeyFileMode: a key file others may read is a
// key_file_mode refusal whose hint is the chmod to run; one its group may
// read loads, and is logged as a warning; a 0600 one loads quietly.
func TestEncryptionKeyFileMode(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(keyring.Generate()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KL_ENCRYPTION_KEY", "")
	for _, tc := range []struct {
		mode    os.FileMode
		refused bool
		warned  bool
	}{{0o644, true, false}, {0o640, false, true}, {0o600, false, false}} {
		mustChmod(t, file, tc.mode)
		var logs bytes.Buffer
		e := &Encryption{EncryptionKeyFile: file}
		opts, atRest, err := e.StoreOptions(log.New(&logs))
		var ie *kilolock.InvalidError
		switch {
		case tc.refused && (!errors.As(err, &ie) || ie.Code != "key_file_mode" || !strings.Contains(ie.Hint, "chmod 600 "+file) || opts != nil):
			t.Errorf("mode %04o: %v; want key_file_mode with the chmod to run", tc.mode, err)
		case !tc.refused && (err != nil || !strings.HasPrefix(atRest, "key ")):
			t.Errorf("mode %04o: %q, %v; want the key in force", tc.mode, atRest, err)
		case strings.Contains(logs.String(), "its group can read it") != tc.warned:
			t.Errorf("mode %04o: log %q; want a warning: %v", tc.mode, logs.String(), tc.warned)
		}
	}
}

func mustChmod(t *testing.T, file string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(file, mode); err != nil {
		t.Fatal(err)
	}
}

// TestPublicURL: --public-url (KL_PUBLIC_URL) takes an http or https URL
// of a host; with https kld counts as behind TLS, as with --tls-cert.
func TestPublicURL(t *testing.T) {
	parseServing := func(args ...string) (*Serving, error) {
		var c struct {
			Serving Serving `embed:""`
		}
		parser, err := kong.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse(args)
		return &c.Serving, err
	}
	for _, tt := range []struct {
		args      []string
		env       string
		wantErr   bool
		behindTLS bool
	}{
		{nil, "", false, false},
		{[]string{"--public-url", "https://kl.example.com"}, "", false, true},
		{[]string{"--public-url", "https://kl.example.com:8443/"}, "", false, true},
		{nil, "https://kl.example.com", false, true},
		{[]string{"--public-url", "http://kl.example.com"}, "", false, false},
		{[]string{"--public-url", "kl.example.com"}, "", true, false},
		{[]string{"--public-url", "ftp://kl.example.com"}, "", true, false},
		{[]string{"--public-url", "https://"}, "", true, false},
		{[]string{"--public-url", "https://u:p@kl.example.com"}, "", true, false},
		{[]string{"--public-url", "https://kl.example.com/?x=1"}, "", true, false},
	} {
		t.Setenv("KL_PUBLIC_URL", tt.env)
		s, err := parseServing(tt.args...)
		if (err != nil) != tt.wantErr || err != nil && !strings.Contains(err.Error(), "--public-url") {
			t.Errorf("%v (KL_PUBLIC_URL=%q): %v, want an error: %v", tt.args, tt.env, err, tt.wantErr)
			continue
		}
		if err == nil && s.BehindTLS() != tt.behindTLS {
			t.Errorf("%v (KL_PUBLIC_URL=%q): BehindTLS %v, want %v", tt.args, tt.env, s.BehindTLS(), tt.behindTLS)
		}
	}
}

// TestQueryConcurrency: --query-concurrency (KL_QUERY_CONCURRENCY) sets
// how many queries one credential runs at once, 2 by default; 0 sets no
// limit.
func TestQueryConcurrency(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want int
	}{
		{"default", nil, "", 2},
		{"flag", []string{"--query-concurrency=5"}, "", 5},
		{"environment", nil, "1", 1},
		{"no limit", []string{"--query-concurrency", "0"}, "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("KL_QUERY_CONCURRENCY", tt.env)
			}
			o := parse(t, tt.args...).Handler(httpbackend.Options{OperatorToken: "klo_x"})
			if o.QueryConcurrency != tt.want || o.OperatorToken != "klo_x" {
				t.Errorf("Handler = %+v, want QueryConcurrency %d", o, tt.want)
			}
		})
	}
}

// TestPlanLockLimitFlag: --plan-lock-limit is an hour by default, 0 turns
// it off, and a limit under a second is refused.
func TestPlanLockLimitFlag(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		limit time.Duration
		bad   string
	}{
		{nil, time.Hour, ""},
		{[]string{"--plan-lock-limit", "0"}, 0, ""},
		{[]string{"--plan-lock-limit", "15m"}, 15 * time.Minute, ""},
		{[]string{"--plan-lock-limit", "100ms"}, 0, "at least 1s"},
		{[]string{"--plan-lock-limit=-1m"}, 0, "at least 1s"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var c struct {
				Limits Limits `embed:""`
			}
			parser, err := kong.New(&c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = parser.Parse(tt.args) // kong calls Validate
			switch {
			case tt.bad == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)):
				t.Errorf("Validate = %v, want an error saying %q", err, tt.bad)
			case tt.bad == "" && c.Limits.PlanLockLimit != tt.limit:
				t.Errorf("limit %s, want %s", c.Limits.PlanLockLimit, tt.limit)
			}
		})
	}
}

// TestOperatorTokenFlag: kld refuses an operator token that is short, lacks
// the klo_ prefix or holds a space, naming kl token operator; one kl token
// operator made, or any klo_ and 32 characters, is taken.
func TestOperatorTokenFlag(t *testing.T) {
	made, err := klcli.NewOperatorSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token string
		ok    bool
	}{
		{made, true},
		{"klo_" + strings.Repeat("a", 32), true},
		{"hunter2", false},
		{"klo_short", false},
		{"klt_" + strings.Repeat("a", 64), false},
		{strings.Repeat("a", 64), false},
		{"klo_" + strings.Repeat("a", 40) + "\n", false},
	} {
		var c struct {
			Serving Serving `embed:""`
		}
		parser, err := kong.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse([]string{"--auth=token", "--operator-token", tt.token})
		if tt.ok != (err == nil) {
			t.Errorf("--operator-token %q: err = %v, want ok %v", tt.token, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "kl token operator") {
			t.Errorf("--operator-token %q: %v does not say how to make one", tt.token, err)
		}
	}
}
