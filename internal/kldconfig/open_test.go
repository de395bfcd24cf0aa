package kldconfig

import (
	"bytes"
	"database/sql"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock/store/sqlite"
)

// kld migrate says what it applied, then that there is nothing to apply;
// a database a newer release migrated maps to ExitSchema with a hint, and
// a setting that is wrong to ExitConfig.
func TestMigrate(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "kilolock.db")
	var out bytes.Buffer
	if err := Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}); err != nil {
		t.Fatal(err)
	}
	if want := regexp.MustCompile(`^schema 0 -> \d+: applied \d+ migration\(s\): 0001_init\.sql, .*\n$`); !want.MatchString(out.String()) {
		t.Errorf("first kld migrate printed %q", out.String())
	}
	out.Reset()
	if err := Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "is up to date: nothing to apply\n") {
		t.Errorf("second kld migrate printed %q", out.String())
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO kl_schema_version (version, name, applied_at) VALUES (?, 'future.sql', '')`, sqlite.SchemaVersion()+1)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"migrate": func() error { return Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}) },
		"open": func() error {
			_, _, err := Open(ctx, log.New(&out), path, &Limits{}, &Encryption{})
			return err
		},
	} {
		err := call()
		code, hint := Exit(err)
		if code != ExitSchema || !strings.Contains(hint, "restore the backup") || !strings.Contains(err.Error(), "future.sql") {
			t.Errorf("%s of a newer schema: %v, exit %d, hint %q; want exit %d with a hint", name, err, code, hint, ExitSchema)
		}
	}

	_, _, err = Open(ctx, log.New(&out), "mysql://db/kilolock", &Limits{}, &Encryption{})
	if code, hint := Exit(err); code != ExitConfig || hint == "" {
		t.Errorf("open of an unknown scheme: %v, exit %d, hint %q; want %d with a hint", err, code, hint, ExitConfig)
	}
	if code, _ := Exit(errors.New("serve: boom")); code != ExitFailure {
		t.Errorf("a plain error maps to %d, want %d", code, ExitFailure)
	}
}
