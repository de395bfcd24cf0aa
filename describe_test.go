package kilolock_test

import (
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
)

// TestTextForPeople: what the domain types say of themselves is what kl
// prints, word for word.
func TestTextForPeople(t *testing.T) {
	enc := &kilolock.ClientEncryption{Version: "v0", KeyProviders: []kilolock.KeyProvider{{Type: "pbkdf2", Name: "team"}, {Alias: "ops"}}, MoreKeyProviders: 2}
	refused := &kilolock.QuotaEvent{Verdict: quota.Check(quota.ScopeState, "prod", 100, 1, quota.Limit{Soft: 80, Hard: 100})}
	warned := &kilolock.QuotaEvent{Verdict: quota.Check(quota.ScopeState, "prod", 80, 1, quota.Limit{Soft: 80, Hard: 100}), Version: 7, Actor: "ana", LockID: "l-1"}
	for _, tc := range []struct{ got, want string }{
		{(&kilolock.Rejection{Reason: kilolock.ReasonWriteConflict, Addresses: []string{"a.b"}}).Explain(), "conflict: another writer changed the same addresses first"},
		{(&kilolock.Rejection{Reason: kilolock.ReasonWriteConflict}).Explain(), "conflict: another writer committed first, and client-side encrypted writes cannot be merged"},
		{(&kilolock.Rejection{Reason: kilolock.ReasonStaleSerial}).Explain(), "stale_serial: the write was older than the stored state"},
		{(&kilolock.Rejection{Reason: "new_reason"}).Explain(), "new_reason"},
		{enc.ProviderList(), "pbkdf2.team, alias ops, 2 more"},
		{(&kilolock.ClientEncryption{}).ProviderList(), ""},
		{kilolock.State{ClientEncryption: enc, RequireClientEncryption: true}.EncryptionSummary(), "pbkdf2.team, alias ops, 2 more, required"},
		{kilolock.State{ClientEncryption: &kilolock.ClientEncryption{}}.EncryptionSummary(), "client-side"},
		{kilolock.State{Current: 3}.EncryptionSummary(), ""},
		{kilolock.State{ClientEncryption: enc, Current: 3}.EncryptionText(), "client-side (OpenTofu v0), key providers pbkdf2.team, alias ops, 2 more"},
		{kilolock.State{ClientEncryption: &kilolock.ClientEncryption{}, Current: 3}.EncryptionText(), "client-side (OpenTofu), key providers known after the next write"},
		{kilolock.State{Current: 3, EnvironmentRequiresClientEncryption: true}.EncryptionText(), "none: the current version is plaintext; required by its environment; plaintext writes are refused"},
		{kilolock.State{Current: 3}.EncryptionText(), ""},
		{refused.Describe(), "state prod: 101 managed instance(s) would exceed the hard limit of 100 (soft 80) (nothing was written)"},
		{warned.Describe(), "state prod: 81 managed instance(s) is above the soft limit of 80 (hard 100, 19 left) (version 7, by ana, lock l-1)"},
		{kilolock.PrunedRange{From: 3, To: 9}.String(), "@3-@9"},
		{kilolock.PrunedRange{From: 3, To: 3}.String(), "@3"},
		{(&kilolock.Version{Source: kilolock.SourceMerge, BaseSerial: 4}).SourceText(), "merge (base 4)"},
		{(&kilolock.Version{Source: kilolock.SourceRollback}).SourceText(), "rollback"},
		{(&kilolock.Version{Added: 2, Changed: 1, Merged: true, BaseSerial: 5}).ChangesText(), "+2 ~1 -0 merged, base serial 5"},
		{(&kilolock.Version{Source: kilolock.SourceMerge, Merged: true, Removed: 1}).ChangesText(), "+0 ~0 -1"},
		{(&kilolock.Version{Format: kilolock.FormatOpaque, Added: 1}).ChangesText(), "encrypted"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}
