package postgres

import (
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/storetest"
)

// TestStore runs the conformance suite every kilolock.Store must pass, each
// group on a fresh database.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t testing.TB) kilolock.Store { return openStore(t) })
}
