package main

import (
	"testing"

	"github.com/alecthomas/kong"
)

// TestDefaultLockMode checks --default-lock-mode and KL_DEFAULT_LOCK_MODE:
// exclusive unless told, one of the two modes only.
func TestDefaultLockMode(t *testing.T) {
	parse := func(args ...string) (*cli, error) {
		var c cli
		parser, err := kong.New(&c, kong.Vars{"version": "test"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse(args)
		return &c, err
	}
	if c, err := parse(); err != nil || c.DefaultLockMode != "exclusive" {
		t.Errorf("default: %q, %v", c.DefaultLockMode, err)
	}
	if c, err := parse("--default-lock-mode=optimistic"); err != nil || c.DefaultLockMode != "optimistic" {
		t.Errorf("flag: %q, %v", c.DefaultLockMode, err)
	}
	if _, err := parse("--default-lock-mode=shared"); err == nil {
		t.Error("an unknown mode was accepted")
	}
	t.Setenv("KL_DEFAULT_LOCK_MODE", "optimistic")
	if c, err := parse(); err != nil || c.DefaultLockMode != "optimistic" {
		t.Errorf("KL_DEFAULT_LOCK_MODE: %q, %v", c.DefaultLockMode, err)
	}
}
