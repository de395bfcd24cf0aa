package postgres

import (
	"context"
	"os/exec"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/storetest"
)

// TestStore runs the conformance suite every kilolock.Store must pass, each
// group on a fresh database.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t testing.TB) kilolock.Store { return openStore(t) })
}

// TestAtRest runs the encryption-at-rest suite; its dump is pg_dump's of
// the database, as a backup or a read replica would hold it.
func TestAtRest(t *testing.T) {
	pgDump := testpg.Tool(t, "pg_dump")
	storetest.RunAtRest(t, func(t testing.TB) storetest.AtRest {
		url := testpg.URL(t)
		return storetest.AtRest{
			Open: func(t testing.TB, ring *keyring.Ring) (kilolock.Store, error) {
				s, err := Open(context.Background(), url, WithKeyring(ring))
				if err == nil {
					t.Cleanup(func() { s.Close() })
				}
				return s, err
			},
			Dump: func(t testing.TB) []byte {
				out, err := exec.Command(pgDump, "--dbname", url).Output()
				if err != nil {
					t.Fatalf("pg_dump: %v", err)
				}
				return out
			},
		}
	})
}

// BenchmarkInventory is storetest.BenchInventory (KL_BENCH_STATES and
// KL_BENCH_INSTANCES size the fleet; 1,000 x 1,000 by default).
func BenchmarkInventory(b *testing.B) { storetest.BenchInventory(b, openStore(b)) }
