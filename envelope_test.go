package kilolock_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/tenancy"
)

// envelope is a client-side encrypted state as OpenTofu writes it: the
// serial and lineage in the clear, meta naming the key provider, and the
// encrypted state (here: bytes that say which write it is).
func envelope(serial int, lineage, data string) []byte {
	return fmt.Appendf(nil, `{"serial":%d,"lineage":%q,"meta":{"key_provider.pbkdf2.team":"eyJzYWx0IjoiYWJjIn0="},"encrypted_data":%q,"encryption_version":"v0"}`,
		serial, lineage, base64.StdEncoding.EncodeToString([]byte(data)))
}

// conflictOf returns err as a *ConflictError, failing t when it is not one
// with reason.
func conflictOf(t *testing.T, err error, reason string) *kilolock.ConflictError {
	t.Helper()
	var ce *kilolock.ConflictError
	if !errors.As(err, &ce) || ce.Reason != reason {
		t.Fatalf("err = %v (%T); want a ConflictError with reason %s", err, err, reason)
	}
	if ce.Hint == "" {
		t.Errorf("the refusal has no hint: %+v", ce)
	}
	return ce
}

// serials lists a state's versions' serials, newest first.
func serials(t *testing.T, e *kilolock.Engine, name string) []uint64 {
	t.Helper()
	h, err := e.History(context.Background(), name, kilolock.HistoryOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, v := range h {
		out = append(out, v.Serial)
	}
	return out
}

// TestEncryptedWritesRecordSerialAndLineage: an envelope's version has the
// serial and lineage the envelope carries in the clear, and the state
// knows which key providers encrypted it.
func TestEncryptedWritesRecordSerialAndLineage(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(open(t), kilolock.Options{})
			enginetest.Write(t, e, "enc", envelope(1, "lin-a", "first"))
			enginetest.Write(t, e, "enc", envelope(2, "lin-a", "second"))
			if got := serials(t, e, "enc"); !cmp.Equal(got, []uint64{2, 1}) {
				t.Errorf("serials = %v, want [2 1]", got)
			}
			st, err := e.Store().State(ctx, "enc")
			if err != nil {
				t.Fatal(err)
			}
			want := &kilolock.ClientEncryption{Version: "v0", KeyProviders: []kilolock.KeyProvider{{Type: "pbkdf2", Name: "team"}}}
			if st.Serial != 2 || st.Lineage != "lin-a" || !cmp.Equal(st.ClientEncryption, want) {
				t.Errorf("state = serial %d, lineage %q, encryption %+v; want 2, lin-a, %+v", st.Serial, st.Lineage, st.ClientEncryption, want)
			}
			if v, err := e.Store().VersionBySerial(ctx, "enc", 1); err != nil || v.Number != 1 {
				t.Errorf("VersionBySerial(1) = %+v, %v; want version 1", v, err)
			}
			// Back to plaintext (OpenTofu's unencrypted method with the
			// old key as fallback): the state is no longer encrypted.
			enginetest.Write(t, e, "enc", enginetest.TFState(t, true, 3, "lin-a", "x"))
			if st, _ := e.Store().State(ctx, "enc"); st.ClientEncryption != nil {
				t.Errorf("after a plaintext write the state still says %+v", st.ClientEncryption)
			}
		})
	})
}

// TestEncryptedWritesAreGuarded is each guard of a plaintext state held
// against envelopes, and against writes that cross between plaintext and
// encrypted: the refusal, and history untouched. Before the fix every
// envelope was forced through.
func TestEncryptedWritesAreGuarded(t *testing.T) {
	tests := []struct {
		name    string
		current []byte // the state's one version
		write   []byte
		reason  string
		hint    string // in the refusal's hint
	}{
		{"unlocked stale serial", envelope(5, "lin", "current"), envelope(3, "lin", "stale"), kilolock.ReasonStaleSerial, "older"},
		{"another lineage over plaintext", enginetest.TFState(t, true, 5, "lin", "x"), envelope(6, "other", "theirs"), kilolock.ReasonLineage, "fallback"},
		{"another lineage over encrypted", envelope(5, "lin", "ours"), envelope(6, "other", "theirs"), kilolock.ReasonLineage, "--allow-lineage-change"},
		{"plaintext of another lineage over encrypted", envelope(5, "lin", "ours"), enginetest.TFState(t, true, 6, "other", "x"), kilolock.ReasonLineage, "unencrypted"},
		{"stale plaintext over encrypted", envelope(5, "lin", "ours"), enginetest.TFState(t, true, 4, "lin", "x"), kilolock.ReasonStaleSerial, "unencrypted"},
		{"stale envelope over plaintext", enginetest.TFState(t, true, 5, "lin", "x"), envelope(4, "lin", "old"), kilolock.ReasonStaleSerial, "method.unencrypted"},
	}
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			e := kilolock.NewEngine(open(t), kilolock.Options{})
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					state := fmt.Sprintf("s%d", i)
					enginetest.Write(t, e, state, tt.current)
					_, err := e.Write(context.Background(), state, tt.write, kilolock.WriteOptions{})
					if ce := conflictOf(t, err, tt.reason); !strings.Contains(ce.Hint, tt.hint) {
						t.Errorf("hint %q does not mention %q", ce.Hint, tt.hint)
					}
					if got := enginetest.MustRead(t, e, state); !bytes.Equal(got, tt.current) {
						t.Errorf("the refused write replaced the state: %s", got)
					}
					if h := serials(t, e, state); len(h) != 1 {
						t.Errorf("history = %v, want the one version", h)
					}
					// Forced (`state push -force`), the same write goes in.
					if _, err := e.Write(context.Background(), state, tt.write, kilolock.WriteOptions{Force: true}); err != nil {
						t.Errorf("forced write: %v", err)
					}
				})
			}
			// Migrations in place keep the lineage and take the next
			// serial: both ways accepted.
			enginetest.Write(t, e, "m", enginetest.TFState(t, true, 1, "lin", "x"))
			enginetest.Write(t, e, "m", envelope(2, "lin", "encrypted"))
			enginetest.Write(t, e, "m", enginetest.TFState(t, true, 3, "lin", "y"))
			if got := serials(t, e, "m"); !cmp.Equal(got, []uint64{3, 2, 1}) {
				t.Errorf("migration serials = %v", got)
			}
		})
	})
}

// TestEncryptedOptimisticHolders: on an optimistic state, two holders that
// read the same version both write an envelope. The first goes in; the
// second cannot be merged (neither body can be read) and is refused with a
// 409 on record, where before it silently replaced the first. A lock's own
// checkpoints still go in, and a lock-less write must be a fast-forward.
func TestEncryptedOptimisticHolders(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(open(t), kilolock.Options{DefaultLockMode: kilolock.LockOptimistic})
			enginetest.Write(t, e, "shared", envelope(1, "lin", "base"))
			for _, id := range []string{"A", "B"} {
				if _, err := e.Lock(ctx, "shared", kilolock.LockInfo{ID: id, Who: "holder-" + id, Operation: "OperationTypeApply"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Write(ctx, "shared", envelope(2, "lin", "A's apply"), kilolock.WriteOptions{LockID: "A"}); err != nil {
				t.Fatalf("first holder: %v", err)
			}
			// A's own checkpoints (serial + 1 each) under the same lock.
			for serial := 3; serial <= 4; serial++ {
				if _, err := e.Write(ctx, "shared", envelope(serial, "lin", fmt.Sprint("A's checkpoint ", serial)), kilolock.WriteOptions{LockID: "A"}); err != nil {
					t.Fatalf("A's checkpoint %d: %v", serial, err)
				}
			}
			current := enginetest.MustRead(t, e, "shared")
			for _, body := range [][]byte{envelope(2, "lin", "B's apply"), envelope(9, "lin", "B's apply, higher serial"), enginetest.TFState(t, true, 5, "lin", "B's plaintext")} {
				_, err := e.Write(ctx, "shared", body, kilolock.WriteOptions{LockID: "B"})
				ce := conflictOf(t, err, kilolock.ReasonWriteConflict)
				if ce.Winner == nil || ce.Winner.LockID != "A" || ce.Winner.Version != 4 || ce.BaseSerial != 1 || !strings.Contains(ce.Message, "encrypted") {
					t.Errorf("refusal = %+v (winner %+v); want A's version 4 named, base serial 1", ce, ce.Winner)
				}
			}
			if got := enginetest.MustRead(t, e, "shared"); !bytes.Equal(got, current) {
				t.Errorf("B replaced A's state: %s", got)
			}
			if got := serials(t, e, "shared"); !cmp.Equal(got, []uint64{4, 3, 2, 1}) {
				t.Errorf("serials = %v, want [4 3 2 1]", got)
			}
			rs, err := history.Rejections(ctx, e, "shared", 10)
			if err != nil || len(rs) != 3 || rs[0].LockID != "B" || rs[0].Reason != kilolock.ReasonWriteConflict {
				t.Errorf("rejections = %+v, %v; want B's three, on record", rs, err)
			}
			// Without a lock: only above the current serial.
			_, err = e.Write(ctx, "shared", envelope(4, "lin", "lock-less, same serial"), kilolock.WriteOptions{})
			conflictOf(t, err, kilolock.ReasonStaleSerial)
			if _, err := e.Write(ctx, "shared", envelope(5, "lin", "lock-less, next serial"), kilolock.WriteOptions{}); err != nil {
				t.Errorf("lock-less fast-forward: %v", err)
			}
		})
	})
}

// TestRequireClientEncryption: a state (or its environment) that requires
// client-side encryption refuses plaintext writes, forced ones too, with
// nothing stored; envelopes go in.
func TestRequireClientEncryption(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			e := kilolock.NewEngine(store, kilolock.Options{})
			// Before the state's first write.
			if err := e.SetRequireClientEncryption(ctx, "secret", true); err != nil {
				t.Fatal(err)
			}
			for _, o := range []kilolock.WriteOptions{{}, {Force: true}} {
				_, err := e.Write(ctx, "secret", enginetest.TFState(t, true, 1, "lin", "x"), o)
				if ce := conflictOf(t, err, kilolock.ReasonClientEncryptionRequired); !strings.Contains(ce.Message, `state "secret" requires`) || !strings.Contains(ce.Hint, "encryption") {
					t.Errorf("refusal = %+v", ce)
				}
			}
			st, err := store.State(ctx, "secret")
			if err != nil || st.Current != 0 || !st.RequireClientEncryption {
				t.Fatalf("state after refused writes = %+v, %v; want no version, requiring encryption", st, err)
			}
			enginetest.Write(t, e, "secret", envelope(1, "lin", "encrypted"))
			_, err = e.Write(ctx, "secret", enginetest.TFState(t, true, 2, "lin", "x"), kilolock.WriteOptions{})
			conflictOf(t, err, kilolock.ReasonClientEncryptionRequired)
			if got := serials(t, e, "secret"); !cmp.Equal(got, []uint64{1}) {
				t.Errorf("serials = %v, want [1]", got)
			}
			if rs, err := history.Rejections(ctx, e, "secret", 10); err != nil || len(rs) != 3 || rs[0].Reason != kilolock.ReasonClientEncryptionRequired {
				t.Errorf("rejections = %+v, %v; want the three refusals on record", rs, err)
			}
			if err := e.SetRequireClientEncryption(ctx, "secret", false); err != nil {
				t.Fatal(err)
			}
			enginetest.Write(t, e, "secret", enginetest.TFState(t, true, 2, "lin", "x"))
			// A plaintext version the server would make (a rollback to
			// the plaintext past) is refused too.
			enginetest.Write(t, e, "secret", envelope(3, "lin", "encrypted again"))
			if err := e.SetRequireClientEncryption(ctx, "secret", true); err != nil {
				t.Fatal(err)
			}
			_, err = history.Rollback(ctx, e, "secret", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 2}, history.RollbackOptions{})
			conflictOf(t, err, kilolock.ReasonClientEncryptionRequired)
			if _, err := history.Rollback(ctx, e, "secret", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}, history.RollbackOptions{}); err != nil {
				t.Errorf("rollback to an encrypted version: %v", err)
			}
			if got := serials(t, e, "secret"); !cmp.Equal(got, []uint64{1, 3, 2, 1}) {
				t.Errorf("serials = %v, want [1 3 2 1]: the rollback to @1 has its envelope's serial", got)
			}

			// The environment's setting, an operator's, holds for
			// every state of it, whatever the state's own setting.
			c := tenancy.NewControl(store.(tenancy.TenantStore))
			by := kilolock.Caller{Actor: "op"}
			ws, err := c.CreateWorkspace(ctx, by, "acme", tenancy.WorkspaceOrganization, "")
			if err != nil {
				t.Fatal(err)
			}
			env, err := c.CreateEnvironment(ctx, by, ws.ID, "prod")
			if err != nil {
				t.Fatal(err)
			}
			yes := true
			if got, err := c.ConfigureEnvironment(ctx, by, ws.ID, env.PublicID, tenancy.EnvironmentConfig{RequireClientEncryption: &yes}); err != nil || !got.RequireClientEncryption {
				t.Fatalf("ConfigureEnvironment = %+v, %v", got, err)
			}
			tenant, err := tenancy.TenantStateName(ws.ID, env.PublicID, "app")
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Write(ctx, tenant, enginetest.TFState(t, true, 1, "lin", "x"), kilolock.WriteOptions{})
			if ce := conflictOf(t, err, kilolock.ReasonClientEncryptionRequired); !strings.Contains(ce.Message, "environment") {
				t.Errorf("refusal %q does not name the environment", ce.Message)
			}
			enginetest.Write(t, e, tenant, envelope(1, "lin", "encrypted"))
			st, err = store.State(ctx, tenant)
			if err != nil || !st.EnvironmentRequiresClientEncryption || st.RequireClientEncryption {
				t.Errorf("tenant state = %+v, %v; want its environment's requirement", st, err)
			}
			if err := e.SetRequireClientEncryption(ctx, tenant, false); err != nil {
				t.Fatal(err)
			}
			_, err = e.Write(ctx, tenant, enginetest.TFState(t, true, 2, "lin", "x"), kilolock.WriteOptions{})
			conflictOf(t, err, kilolock.ReasonClientEncryptionRequired)
			if envs, err := c.Environments(ctx, ws.ID); err != nil || len(envs) != 1 || !envs[0].RequireClientEncryption {
				t.Errorf("Environments = %+v, %v", envs, err)
			}
			_, log := enginetest.AuditLog(t, c)
			if !strings.Contains(strings.Join(log, "\n"), "environment.config "+env.PublicID) {
				t.Errorf("audit log lacks the change:\n%s", strings.Join(log, "\n"))
			}
		})
	})
}

// TestIncompleteEnvelope: an envelope without a serial or a lineage cannot
// be guarded, so it is refused (400), unless forced.
func TestIncompleteEnvelope(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "enc", envelope(3, "lin", "current"))
	for _, doc := range []string{
		`{"meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`,
		`{"serial":null,"lineage":"lin","meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`,
		`{"serial":4,"lineage":"","meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`,
	} {
		_, err := e.Write(ctx, "enc", []byte(doc), kilolock.WriteOptions{})
		var ie *kilolock.InvalidError
		if !errors.As(err, &ie) || ie.Code != "encrypted_state_incomplete" || ie.Hint == "" {
			t.Errorf("%s: %v; want encrypted_state_incomplete", doc, err)
		}
	}
	w, err := e.Write(ctx, "enc", []byte(`{"meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`), kilolock.WriteOptions{Force: true})
	if err != nil || w.Version.Serial != 3 || w.Version.Lineage != "lin" {
		t.Errorf("forced = %+v, %v; want the stored serial and lineage kept", w, err)
	}
}

// TestEncryptedStateHistory: what works on whole versions works on an
// encrypted state: tags, serial references, diffs (as whole documents),
// rollback to a tag (the envelope's own serial), retention (the tagged and
// the current versions kept, each kept one reading back its bytes). Both
// stores.
func TestEncryptedStateHistory(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) { testEncryptedStateHistory(t, open(t)) })
	})
}

func testEncryptedStateHistory(t *testing.T, st kilolock.Store) {
	ctx := context.Background()
	e := kilolock.NewEngine(st, kilolock.Options{})
	by := kilolock.Caller{Actor: "ops"}
	docs := map[int64][]byte{}
	for i := int64(1); i <= 6; i++ {
		docs[i] = envelope(int(i), "lin", fmt.Sprint("apply ", i))
		enginetest.Write(t, e, "vault", docs[i])
	}
	if _, err := history.SetTag(ctx, e, "vault", "before-rotation", enginetest.MustRef(t, "serial:2"), history.TagOptions{By: by}); err != nil {
		t.Fatal(err)
	}
	d, err := history.Diff(ctx, e, "vault", enginetest.MustRef(t, "before-rotation"), kilolock.Latest)
	if err != nil || !d.Opaque || d.Identical == nil || *d.Identical || d.From.Number != 2 || d.To.Number != 6 || !d.Empty() {
		t.Fatalf("Diff(before-rotation, latest) = %+v, %v; want an opaque diff of @2 and @6 that differ", d, err)
	}
	if d, err := history.Diff(ctx, e, "vault", enginetest.MustRef(t, "@6"), kilolock.Latest); err != nil || d.Identical == nil || !*d.Identical {
		t.Errorf("Diff(@6, latest) = %+v, %v; want identical", d, err)
	}
	if _, err := retention.SetRetentionPolicy(ctx, e, by, retention.RetentionPolicy{Scope: retention.RetentionServer, KeepLast: 2}); err != nil {
		t.Fatal(err)
	}
	rep, err := retention.ApplyRetention(ctx, e, retention.RetentionOptions{By: by})
	if err != nil || rep.Versions != 3 {
		t.Fatalf("ApplyRetention = %+v, %v; want 3 versions pruned (@1, @3, @4)", rep, err)
	}
	for _, n := range []int64{2, 5, 6} {
		b, err := e.ReadVersion(ctx, "vault", n)
		if err != nil || !bytes.Equal(b.Bytes, docs[n]) || b.Version.Serial != uint64(n) {
			t.Errorf("ReadVersion(@%d) after retention = %v; want its envelope and serial", n, err)
		}
	}
	res, err := history.Rollback(ctx, e, "vault", enginetest.MustRef(t, "before-rotation"), history.RollbackOptions{Actor: "alice"})
	if err != nil || res.Version == nil || !res.Plan.Opaque || res.Version.Serial != 2 || res.Version.Source != kilolock.SourceRollback {
		t.Fatalf("Rollback(before-rotation) = %+v, %v", res, err)
	}
	if got := enginetest.MustRead(t, e, "vault"); !bytes.Equal(got, docs[2]) {
		t.Errorf("after the rollback the state is %s", got)
	}
	// tofu's next apply reads serial 2 and writes 3: above the rollback's.
	enginetest.Write(t, e, "vault", envelope(3, "lin", "after the rollback"))
}
