package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// opaque is the next commit of name as an OpenTofu client-side encrypted
// version: the envelope kept as Raw, its clear part as ClientEncryption.
func opaque(t testing.TB, s kilolock.Store, name string, ce *kilolock.ClientEncryption) *kilolock.Commit {
	t.Helper()
	c := next(t, s, name)
	c.Version.Format = kilolock.FormatOpaque
	c.Raw = []byte{0x1f, 0x8b, 8, 0}
	c.ClientEncryption = ce
	return c
}

// testClientEncryption: a store keeps what an encrypted version's envelope
// says with its state, and refuses plaintext commits to a state that (or
// whose environment) requires client-side encryption, in the commit's
// transaction, writing nothing; the serial and lineage guards hold for
// encrypted commits as for plaintext ones.
func testClientEncryption(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	team := &kilolock.ClientEncryption{Version: "v0", KeyProviders: []kilolock.KeyProvider{{Type: "pbkdf2", Name: "team"}, {Alias: "ops-kms"}}}

	t.Run("the state keeps the current version's encryption", func(t *testing.T) {
		commit(t, s, "enc", opaque(t, s, "enc", team))
		if got := state(t, s, "enc").ClientEncryption; !cmp.Equal(got, team) {
			t.Errorf("ClientEncryption = %+v, want %+v", got, team)
		}
		sts, err := s.States(ctx)
		if err != nil || len(sts) != 1 || !cmp.Equal(sts[0].ClientEncryption, team) {
			t.Errorf("States = %+v, %v", sts, err)
		}
		// An opaque version that says nothing of its envelope is still
		// known to be encrypted.
		commit(t, s, "enc", opaque(t, s, "enc", nil))
		if got := state(t, s, "enc").ClientEncryption; got == nil || len(got.KeyProviders) != 0 {
			t.Errorf("ClientEncryption of an opaque commit without one = %+v, want empty, not nil", got)
		}
		commit(t, s, "enc", next(t, s, "enc"))
		if got := state(t, s, "enc").ClientEncryption; got != nil {
			t.Errorf("after a plaintext commit ClientEncryption = %+v, want nil", got)
		}
	})

	t.Run("guards hold for encrypted commits", func(t *testing.T) {
		commit(t, s, "guarded", opaque(t, s, "guarded", team))
		commit(t, s, "guarded", opaque(t, s, "guarded", team))
		before := freeze(t, s, "guarded")
		stale := opaque(t, s, "guarded", team)
		stale.Version.Serial = 1
		_, _, err := s.Commit(ctx, "guarded", stale)
		if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonStaleSerial {
			t.Errorf("stale encrypted commit: %+v", ce)
		}
		other := opaque(t, s, "guarded", team)
		other.Version.Lineage = "another"
		_, _, err = s.Commit(ctx, "guarded", other)
		if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonLineage {
			t.Errorf("encrypted commit of another lineage: %+v", ce)
		}
		before.unchanged(t, s, "guarded")
	})

	t.Run("a state that requires client-side encryption", func(t *testing.T) {
		must(t, s.SetRequireClientEncryption(ctx, "required", true))
		if st := state(t, s, "required"); st.Current != 0 || !st.RequireClientEncryption || !st.ClientEncryptionRequired() {
			t.Fatalf("state after SetRequireClientEncryption = %+v; want it created, requiring encryption", st)
		}
		for _, force := range []bool{false, true} {
			c := next(t, s, "required")
			c.Force = force
			_, _, err := s.Commit(ctx, "required", c)
			if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonClientEncryptionRequired || ce.Hint == "" {
				t.Errorf("plaintext commit (force %v): %+v", force, ce)
			}
		}
		if h, err := s.History(ctx, "required", kilolock.HistoryOptions{}); err != nil || len(h) != 0 {
			t.Errorf("refused commits wrote %+v, %v", h, err)
		}
		commit(t, s, "required", opaque(t, s, "required", team))
		must(t, s.SetRequireClientEncryption(ctx, "required", false))
		commit(t, s, "required", next(t, s, "required"))
		if st := state(t, s, "required"); st.RequireClientEncryption || st.Current != 2 {
			t.Errorf("state = %+v; want two versions, no requirement", st)
		}
	})

	ts, ok := s.(tenancy.TenantStore)
	if !ok {
		return
	}
	t.Run("an environment that requires client-side encryption", func(t *testing.T) {
		ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "acme", Kind: tenancy.WorkspaceOrganization}
		must(t, ts.CreateWorkspace(ctx, ws))
		env := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
		must(t, ts.CreateEnvironment(ctx, env))
		name, err := tenancy.TenantStateName(ws.ID, env.PublicID, "app")
		must(t, err)
		commit(t, s, name, next(t, s, name))
		must(t, ts.SetEnvironmentRequireClientEncryption(ctx, env.PublicID, true))
		if got, err := ts.Environment(ctx, env.PublicID); err != nil || !got.RequireClientEncryption {
			t.Fatalf("Environment = %+v, %v", got, err)
		}
		st := state(t, s, name)
		if !st.EnvironmentRequiresClientEncryption || st.RequireClientEncryption {
			t.Errorf("tenant state = %+v; want its environment's requirement only", st)
		}
		before := freeze(t, s, name)
		_, _, err = s.Commit(ctx, name, next(t, s, name))
		if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonClientEncryptionRequired {
			t.Errorf("plaintext commit to a state of the environment: %+v", ce)
		}
		before.unchanged(t, s, name)
		commit(t, s, name, opaque(t, s, name, team))
		// A state of the local lane, or of another environment, is not held.
		commit(t, s, "local", next(t, s, "local"))
		if err := ts.SetEnvironmentRequireClientEncryption(ctx, "env_missing", true); !errors.Is(err, kilolock.ErrNotFound) {
			t.Errorf("a missing environment: %v, want ErrNotFound", err)
		}
	})
}

// CommitFormats gives s a state "enc" whose current version is client-side
// encrypted and a state "plain" whose current version is not, for a test
// of the migration that records which states are encrypted
// (CheckClientEncryptionUpgrade checks it).
func CommitFormats(t testing.TB, s kilolock.Store) {
	t.Helper()
	commit(t, s, "enc", next(t, s, "enc"))
	commit(t, s, "enc", opaque(t, s, "enc", nil))
	commit(t, s, "plain", opaque(t, s, "plain", nil))
	commit(t, s, "plain", next(t, s, "plain"))
}

// CheckClientEncryptionUpgrade checks the states of CommitFormats once the
// store was upgraded from a schema before client-side encryption was
// recorded: "enc" is known to be encrypted, its key providers unknown, and
// nothing requires client-side encryption.
func CheckClientEncryptionUpgrade(t testing.TB, s kilolock.Store) {
	t.Helper()
	enc, plain := state(t, s, "enc"), state(t, s, "plain")
	if ce := enc.ClientEncryption; ce == nil || ce.Version != "" || ce.KeyProviders == nil || len(ce.KeyProviders) != 0 {
		t.Errorf("the encrypted state after the upgrade: %+v, want encrypted, providers unknown", ce)
	}
	if plain.ClientEncryption != nil || enc.RequireClientEncryption || plain.RequireClientEncryption {
		t.Errorf("after the upgrade: plain %+v, requirements %v %v; want plaintext, nothing required", plain.ClientEncryption, enc.RequireClientEncryption, plain.RequireClientEncryption)
	}
}
