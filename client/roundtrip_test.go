package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/reserve"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

const operatorSecret = "klo_0123456789abcdef0123456789abcdef"

// routeLog records the route each request took, on any handler.
type routeLog struct {
	mu  sync.Mutex
	hit map[string]bool
}

// serve is h on httptest, recording the route of every request.
func (l *routeLog) serve(t *testing.T, h *httpbackend.Handler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := h.Pattern(r); p != "" {
			l.mu.Lock()
			l.hit[p] = true
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// missed are the routes of the handlers that no request took, on any of
// them: every route a client should call but aliases and /metrics
// (Prometheus scrapes it; it is not the API).
func (l *routeLog) missed(hs ...*httpbackend.Handler) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, h := range hs {
		for _, rt := range h.Routes() {
			if rt.AliasOf != "" || rt.Pattern == "GET /metrics" || l.hit[rt.Pattern] || slices.Contains(out, rt.Pattern) {
				continue
			}
			out = append(out, rt.Pattern)
		}
	}
	return out
}

// TestRoundTrip calls every route kld serves through the client, on both
// stores, and decodes every answer into its wire type refusing unknown
// fields. It fails when a route has no client method that calls it: the
// routes come from the handler's own table, so a route added later
// without one fails here.
func TestRoundTrip(t *testing.T) {
	stores := map[string]func(t *testing.T) kilolock.Store{
		"sqlite": func(t *testing.T) kilolock.Store {
			st, err := sqlite.Open(context.Background(), t.TempDir()+"/kld.db")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) kilolock.Store {
			st, err := postgres.Open(context.Background(), testpg.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			st := stores[kind](t)
			open := newKLDOn(t, st, httpbackend.Options{})
			authed := newKLDOn(t, st, httpbackend.Options{Auth: httpbackend.AuthToken, OperatorToken: operatorSecret})
			log := &routeLog{hit: map[string]bool{}}
			roundTripOpen(t, log.serve(t, open))
			roundTripAuthed(t, log.serve(t, authed))
			if m := log.missed(open, authed); len(m) > 0 {
				t.Errorf("routes of kld that no client method called (add one, and call it here): %s", strings.Join(m, ", "))
			}
		})
	}
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, append([]client.Option{client.WithStrictDecoding(), client.WithActor("roundtrip")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// must fails the test on err, naming the call.
func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

// refused checks that err is an *client.Error with code, matching target.
func refused(t *testing.T, what string, err error, code string, target error) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code() != code || !errors.Is(err, target) || ce.Hint() == "" {
		t.Fatalf("%s: %v (%#v), want %s matching %v with a hint", what, err, ce, code, target)
	}
}

// twoResources is a state of terraform_data.a and terraform_data.b, which
// depends on a; b's input is input.
func twoResources(serial int, input string) []byte {
	return []byte(`{"version":4,"terraform_version":"1.9.0","serial":` + strconv.Itoa(serial) + `,"lineage":"rt-lineage",` +
		`"outputs":{"b":{"value":"` + input + `","type":"string"}},"resources":[` +
		`{"mode":"managed","type":"terraform_data","name":"a","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":"a-id","input":null},"dependencies":[]}]},` +
		`{"mode":"managed","type":"terraform_data","name":"b","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":"b-id","input":"` + input + `"},"dependencies":["terraform_data.a"]}]}]}`)
}

func readAll(t *testing.T, what string, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: read: %v", what, err)
	}
	return b
}

// roundTripOpen drives a kld without authentication: the protocol, the
// state API, runs, retention, search and moves.
func roundTripOpen(t *testing.T, url string) {
	ctx := context.Background()
	c := newClient(t, url)

	if s := must[*client.Status](t, "Health")(c.Health(ctx)); s.Status != "ok" {
		t.Fatalf("Health = %+v", s)
	}
	if s := must[*client.Status](t, "Ready")(c.Ready(ctx)); s.Status != "ready" {
		t.Fatalf("Ready = %+v", s)
	}
	if v := must[*client.VersionInfo](t, "Version")(c.Version(ctx)); v.GoVersion == "" {
		t.Fatalf("Version = %+v", v)
	}

	// The protocol: lock, write, unlock, read.
	info := kilolock.LockInfo{ID: "rt-lock", Operation: "OperationTypeApply", Who: "rt@test", Version: "1.9.0", Created: time.Now().UTC()}
	must[*kilolock.Lock](t, "Lock")(c.Lock(ctx, "app", info, ""))
	_, err := c.PutState(ctx, "app", "wrong-lock", twoResources(1, "one"))
	refused(t, "PutState under another lock id", err, "lock_mismatch", kilolock.ErrLockMismatch)
	if w := must[*client.WriteAnswer](t, "PutState")(c.PutState(ctx, "app", "rt-lock", twoResources(1, "one"))); w.Version != 1 || w.Added != 2 {
		t.Fatalf("PutState = %+v", w)
	}
	if u := must[*client.UnlockAnswer](t, "Unlock")(c.Unlock(ctx, "app", info)); len(u.Released) != 1 || u.Forced {
		t.Fatalf("Unlock = %+v", u)
	}
	must[*client.WriteAnswer](t, "PutState unlocked")(c.PutState(ctx, "app", "", twoResources(2, "two")))
	if b := readAll(t, "State", must[*client.StateFile](t, "State")(c.State(ctx, "app"))); !bytes.Contains(b, []byte(`"two"`)) {
		t.Fatalf("State = %s", b)
	}
	f := must[*client.StateFile](t, "Outputs")(c.Outputs(ctx, "app"))
	if b := readAll(t, "Outputs", f); f.Version != 2 || bytes.Contains(b, []byte("terraform_data")) {
		t.Fatalf("Outputs (version %d) = %s", f.Version, b)
	}
	if b := readAll(t, "StateVersion", must[*client.StateFile](t, "StateVersion")(c.StateVersion(ctx, "app", 1))); !bytes.Contains(b, []byte(`"one"`)) {
		t.Fatalf("StateVersion 1 = %s", b)
	}

	// The state API.
	if l := must[*client.StateList](t, "States")(c.States(ctx)); len(l.States) != 1 || l.States[0].Name != "app" {
		t.Fatalf("States = %+v", l)
	}
	must[*kilolock.Status](t, "Status")(c.Status(ctx, "app"))
	if l := must[*client.VersionList](t, "History")(c.History(ctx, "app", client.HistoryOptions{Limit: 10})); len(l.Versions) != 2 {
		t.Fatalf("History = %+v", l)
	}
	_, err = c.History(ctx, "app", client.HistoryOptions{Limit: 5000})
	refused(t, "History with a limit past the maximum", err, "invalid_parameter", kilolock.ErrInvalid)
	yes := true
	must[*client.ConfigAnswer](t, "Configure")(c.Configure(ctx, "app", client.StateConfig{SharedPlanLocks: &yes}))
	must[*client.RejectionList](t, "Rejections")(c.Rejections(ctx, "app", 10))
	must[*history.VersionView](t, "Show")(c.Show(ctx, "app", "@1"))
	_, err = c.Show(ctx, "app", "@9")
	refused(t, "Show of a version that is not there", err, "version_not_found", kilolock.ErrNotFound)
	must[*history.InstanceView](t, "ShowInstance")(c.ShowInstance(ctx, "app", "", "terraform_data.b"))
	must[*history.StateDiff](t, "Diff")(c.Diff(ctx, "app", "@1", ""))
	if ch := must[*client.AddressChanges](t, "AddressHistory")(c.AddressHistory(ctx, "app", "terraform_data.b")); len(ch.Changes) == 0 {
		t.Fatalf("AddressHistory = %+v", ch)
	}
	if l := must[*client.InstanceList](t, "StateList")(c.StateList(ctx, "app", "")); len(l.Instances) != 2 {
		t.Fatalf("StateList = %+v", l)
	}
	exported := readAll(t, "Export", must[io.ReadCloser](t, "Export")(c.Export(ctx, "app", "@1")))
	must[*client.ImportResponse](t, "Import")(c.Import(ctx, "copy", exported, false))
	must[*history.ConeView](t, "Cone")(c.Cone(ctx, "app", []string{"terraform_data.a"}, client.ConeOptions{Direction: history.Dependents}))
	if b := readAll(t, "Slice", must[*client.StateFile](t, "Slice")(c.Slice(ctx, "app", "", []string{"terraform_data.b"}, history.SliceDependencies))); !bytes.Contains(b, []byte("terraform_data")) {
		t.Fatalf("Slice = %s", b)
	}
	must[*client.RollbackResponse](t, "Rollback")(c.Rollback(ctx, "app", client.RollbackRequest{To: "@1"}))
	must[*history.StateOpResult](t, "StateRm")(c.StateRm(ctx, "app", client.StateRmRequest{Addresses: []string{"terraform_data.b"}, DryRun: true}))
	must[*history.StateOpResult](t, "StateMv")(c.StateMv(ctx, "app", client.StateMvRequest{From: "terraform_data.b", To: "terraform_data.c", DryRun: true}))

	// Tags and drift.
	must[*history.Tag](t, "SetTag")(c.SetTag(ctx, "app", "first", client.TagRequest{Ref: "@1"}))
	if l := must[*client.TagList](t, "Tags")(c.Tags(ctx, "app")); len(l.Tags) != 1 {
		t.Fatalf("Tags = %+v", l)
	}
	must[*client.OK](t, "DeleteTag")(c.DeleteTag(ctx, "app", "first"))
	_, err = c.RecordDrift(ctx, "app", &drift.DriftReport{Lineage: "other", Serial: 2})
	refused(t, "RecordDrift of another lineage", err, "drift_lineage_mismatch", kilolock.ErrInvalid)
	must[*drift.DriftCheck](t, "RecordDrift")(c.RecordDrift(ctx, "app", &drift.DriftReport{Lineage: "rt-lineage", Serial: 2, Drifted: []drift.DriftedInstance{}}))
	must[*client.DriftList](t, "Drift")(c.Drift(ctx, "app"))
	must[*client.RefreshAnswer](t, "AcceptRefresh")(c.AcceptRefresh(ctx, "app", twoResources(2, "refreshed")))

	// Runs and their reservations.
	var rs []kilolock.Reservation
	if err := json.Unmarshal([]byte(`[{"pattern":"terraform_data.b","mode":"write"}]`), &rs); err != nil {
		t.Fatal(err)
	}
	status := must[*kilolock.Status](t, "Status")(c.Status(ctx, "app"))
	run := must[*kilolock.ApplyRun](t, "StartRun")(c.StartRun(ctx, "app", client.RunRequest{Actor: "rt", Reservations: rs, SourceSerial: status.Serial}))
	must[*kilolock.ApplyRun](t, "AcquireRun")(c.AcquireRun(ctx, run.ID))
	must[*kilolock.ApplyRun](t, "RenewRun")(c.RenewRun(ctx, run.ID))
	must[*kilolock.ApplyRun](t, "Run")(c.Run(ctx, run.ID))
	if l := must[*client.RunList](t, "Runs")(c.Runs(ctx, "app", client.RunsOptions{InFlight: true})); len(l.Runs) != 1 {
		t.Fatalf("Runs = %+v", l)
	}
	must[*client.ChangedAddresses](t, "ChangedSince")(c.ChangedSince(ctx, "app", client.ChangedSinceRequest{Serial: 1, Patterns: []reserve.Pattern{rs[0].Pattern}}))
	must[*kilolock.ApplyRun](t, "EndRun")(c.EndRun(ctx, run.ID, client.RunEndRequest{Status: kilolock.RunSucceeded}))
	_, err = c.RenewRun(ctx, run.ID)
	var ended *kilolock.RunEndedError
	if !errors.As(err, &ended) || ended.Run.ID != run.ID {
		t.Fatalf("RenewRun of an ended run: %v, want *kilolock.RunEndedError", err)
	}
	run2 := must[*kilolock.ApplyRun](t, "StartRun")(c.StartRun(ctx, "app", client.RunRequest{Actor: "rt", Reservations: rs, SourceSerial: status.Serial}))
	must[*kilolock.ApplyRun](t, "AbortRun")(c.AbortRun(ctx, run2.ID))

	// Retention.
	must[*retention.RetentionPolicy](t, "SetRetentionPolicy")(c.SetRetentionPolicy(ctx, retention.RetentionPolicy{Scope: "state", Target: "app", KeepLast: 1}))
	must[*client.RetentionPolicyList](t, "RetentionPolicies")(c.RetentionPolicies(ctx))
	must[*retention.RetentionReport](t, "ApplyRetention")(c.ApplyRetention(ctx, client.RetentionRequest{DryRun: true}))
	must[*client.PrunedList](t, "Pruned")(c.Pruned(ctx, "app", 0, 10))
	must[*client.RetentionPolicyDeleted](t, "DeleteRetentionPolicy")(c.DeleteRetentionPolicy(ctx, "state", "app"))

	// Query, search, moves, quota.
	if q := must[*kilolock.QueryResult](t, "Query")(c.Query(ctx, "SELECT 1 AS one")); len(q.Rows) != 1 {
		t.Fatalf("Query = %+v", q)
	}
	_, err = c.Query(ctx, "DELETE FROM states")
	if !errors.Is(err, kilolock.ErrReadOnly) && !errors.Is(err, kilolock.ErrInvalid) && !errors.Is(err, kilolock.ErrRefused) {
		t.Fatalf("a writing Query: %v, want a refusal", err)
	}
	must[*inventory.Page](t, "Search")(c.Search(ctx, inventory.Filters{Type: "terraform_data"}))
	must[*inventory.DuplicateList](t, "Duplicates")(c.Duplicates(ctx, ""))
	must[*history.MoveResult](t, "Move")(c.Move(ctx, client.MoveRequest{From: "app", To: "copy", Addresses: []history.MovePair{{From: "terraform_data.b", To: "terraform_data.moved"}}, DryRun: true}))
	must[*client.MoveList](t, "Moves")(c.Moves(ctx, "app"))
	must[*kilolock.QuotaStatus](t, "Quota")(c.Quota(ctx, "app", 1))

	// Locks released by force, and a deleted state.
	must[*kilolock.Lock](t, "Lock")(c.Lock(ctx, "copy", info, ""))
	_, err = c.Lock(ctx, "copy", kilolock.LockInfo{ID: "other", Operation: "OperationTypeApply", Who: "x", Created: time.Now()}, "")
	refused(t, "Lock of a held state", err, "locked", kilolock.ErrLocked)
	if u := must[*client.UnlockAnswer](t, "ForceUnlock")(c.ForceUnlock(ctx, "copy", "rt-lock")); !u.Forced || len(u.Released) != 1 {
		t.Fatalf("ForceUnlock = %+v", u)
	}
	must[*client.DeleteAnswer](t, "DeleteState")(c.DeleteState(ctx, "copy", "", true))

	// What a server without authentication refuses.
	_, err = c.Backup(ctx)
	refused(t, "Backup", err, "backup_closed", kilolock.ErrRefused)
	must[*client.KeysAnswer](t, "Keys")(c.Keys(ctx))
	must[*client.RotationAnswer](t, "RotateKeys")(c.RotateKeys(ctx))
	for what, call := range map[string]func() error{
		"Workspaces":        func() error { _, err := c.Workspaces(ctx); return err },
		"Environments":      func() error { _, err := c.Environments(ctx, "ws_x"); return err },
		"Tokens":            func() error { _, err := c.Tokens(ctx, ""); return err },
		"RevokeToken":       func() error { _, err := c.RevokeToken(ctx, "tok_x"); return err },
		"Audit":             func() error { _, err := c.Audit(ctx, client.AuditOptions{}); return err },
		"TrustPolicies":     func() error { _, err := c.TrustPolicies(ctx, ""); return err },
		"RemoveTrustPolicy": func() error { _, err := c.RemoveTrustPolicy(ctx, "trs_x"); return err },
		"Whoami":            func() error { _, err := c.Whoami(ctx); return err },
	} {
		refused(t, what+" on a server without authentication", call(), "tenancy_disabled", kilolock.ErrNotFound)
	}
	_, err = c.SetQuota(ctx, client.QuotaRequest{QuotaChange: tenancy.QuotaChange{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "app"}, Limit: &quota.Limit{Hard: 100}}})
	if err != nil {
		t.Fatalf("SetQuota of a state: %v", err)
	}
	must[[]kilolock.QuotaSetting](t, "Quotas")(c.Quotas(ctx))
}

// roundTripAuthed drives a kld with --auth=token: the control API as the
// operator, a tenant's state and whoami, trust policies, backup.
func roundTripAuthed(t *testing.T, url string) {
	ctx := context.Background()
	op := newClient(t, url, client.WithCredentials(client.Token(operatorSecret)))

	_, err := newClient(t, url).Workspaces(ctx)
	refused(t, "Workspaces without credentials", err, "credentials_missing", kilolock.ErrUnauthorized)

	ws := must[*tenancy.Workspace](t, "CreateWorkspace")(op.CreateWorkspace(ctx, client.WorkspaceRequest{Name: "acme", Kind: tenancy.WorkspaceOrganization, Owner: "alice"}))
	if l := must[[]tenancy.Workspace](t, "Workspaces")(op.Workspaces(ctx)); len(l) != 1 {
		t.Fatalf("Workspaces = %+v", l)
	}
	env := must[*tenancy.Environment](t, "CreateEnvironment")(op.CreateEnvironment(ctx, ws.ID, "prod"))
	_, err = op.CreateEnvironment(ctx, ws.ID, "prod")
	refused(t, "CreateEnvironment twice", err, "slug_taken", kilolock.ErrConflict)
	must[[]tenancy.Environment](t, "Environments")(op.Environments(ctx, ws.ID))
	no := false
	must[*tenancy.Environment](t, "ConfigureEnvironment")(op.ConfigureEnvironment(ctx, ws.ID, env.PublicID, tenancy.EnvironmentConfig{RequireClientEncryption: &no}))
	must[*tenancy.Member](t, "PutMember")(op.PutMember(ctx, ws.ID, "bob", tenancy.RoleMember))
	must[[]tenancy.Member](t, "Members")(op.Members(ctx, ws.ID))
	must[*client.Removed](t, "RemoveMember")(op.RemoveMember(ctx, ws.ID, "bob"))

	auto := must[*client.IssuedToken](t, "IssueToken")(op.IssueToken(ctx, client.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID, Scope: tenancy.ScopeReadWrite}))
	pat := must[*client.IssuedToken](t, "IssueToken PAT")(op.IssueToken(ctx, client.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice"}))
	must[[]tenancy.Token](t, "Tokens")(op.Tokens(ctx, ""))
	must[*tenancy.Grant](t, "AddGrant")(op.AddGrant(ctx, pat.ID, env.PublicID))
	must[[]tenancy.Grant](t, "Grants")(op.Grants(ctx, pat.ID))
	must[*client.Revoked](t, "RevokeGrant")(op.RevokeGrant(ctx, pat.ID, env.PublicID))

	// A tenant writes its state on the authenticated lane, as Terraform
	// does with basic auth, and asks what its token reaches.
	tenant := newClient(t, url, client.WithCredentials(client.Basic{User: ws.ID, Password: auto.Secret}))
	name := ws.ID + "/" + env.PublicID + "/net"
	must[*client.WriteAnswer](t, "tenant PutState")(tenant.PutState(ctx, name, "", twoResources(1, "t")))
	reach := must[*tenancy.Reach](t, "Whoami")(newClient(t, url, client.WithCredentials(client.Token(auto.Secret))).Whoami(ctx))
	if len(reach.Environments) != 1 {
		t.Fatalf("Whoami = %+v", reach)
	}
	must[*client.LifecycleAnswer](t, "ArchiveState")(op.ArchiveState(ctx, ws.ID, env.PublicID, "net"))
	must[*client.LifecycleAnswer](t, "RestoreState")(op.RestoreState(ctx, ws.ID, env.PublicID, "net"))

	must[*client.QuotaRequest](t, "SetQuota")(op.SetQuota(ctx, client.QuotaRequest{QuotaChange: tenancy.QuotaChange{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaEnvironment, Target: env.PublicID}, Limit: &quota.Limit{Hard: 1000}}}))
	must[[]kilolock.QuotaSetting](t, "Quotas")(op.Quotas(ctx))

	p := must[*trust.Policy](t, "AddTrustPolicy")(op.AddTrustPolicy(ctx, trust.Policy{EnvironmentID: env.PublicID, Issuer: "https://issuer.example", Audience: "kilolock", Claims: map[string]string{"repository": "org/app"}, Scope: tenancy.ScopeRead, MaxTTL: trust.Duration(time.Hour)}))
	must[[]trust.Policy](t, "TrustPolicies")(op.TrustPolicies(ctx, env.PublicID))
	must[*client.Removed](t, "RemoveTrustPolicy")(op.RemoveTrustPolicy(ctx, p.ID))

	must[*tenancy.Workspace](t, "SuspendWorkspace")(op.SuspendWorkspace(ctx, ws.ID))
	must[*tenancy.Workspace](t, "ResumeWorkspace")(op.ResumeWorkspace(ctx, ws.ID))
	must[*client.Revoked](t, "RevokeToken")(op.RevokeToken(ctx, auto.ID))
	if a := must[[]kilolock.AuditEntry](t, "Audit")(op.Audit(ctx, client.AuditOptions{Limit: 100})); len(a) == 0 {
		t.Fatal("Audit is empty after the changes above")
	}
	b := readAll(t, "Backup", must[io.ReadCloser](t, "Backup")(op.Backup(ctx)))
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("Backup is not gzip: %.20q", b)
	}
}
