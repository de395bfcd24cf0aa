package storetest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/tenancy"
)

// testBackup runs RunBackup from the store to another of its kind.
func testBackup(t *testing.T, open Opener) { RunBackup(t, open, open) }

// RunBackup checks retention.BackupStore from the stores from opens to
// those to opens (of the same kind or not): a store holding one of
// everything — a random history, odd bytes, refused commits, apply runs,
// tenancy and the audit log, and a held lock — is backed up and restored
// into an empty store, which then holds the same rows (but the lock),
// passes the snapshot and changes checks against the model the history
// was made from, and goes on taking writes with new ids. A restore into a
// store that is not empty, and of a damaged or altered file, or one past
// the restore's limits, is refused and changes nothing.
func RunBackup(t *testing.T, from, to Opener) {
	ctx := context.Background()
	src := from(t)
	history := fill(t, src)
	var file bytes.Buffer
	sum, err := backupStore(t, src).Backup(ctx, &file)
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if sum.Bytes != int64(file.Len()) || len(sum.Excluded) != 1 || sum.Excluded[0].Name != "locks" || sum.Excluded[0].Rows != 1 {
		t.Errorf("Backup summary: %d bytes (file %d), excluded %+v; want the one held lock excluded", sum.Bytes, file.Len(), sum.Excluded)
	}

	dst := to(t)
	got, err := backupStore(t, dst).Restore(ctx, bytes.NewReader(file.Bytes()), retention.RestoreLimits{})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !cmp.Equal(sum.Tables, got.Tables) || got.Store != sum.Store || !got.Created.Equal(sum.Created) || got.Bytes != sum.Bytes {
		t.Errorf("Restore summary %+v, want the backup's %+v", got, sum)
	}
	checkSnapshots(t, dst, "model", history)
	checkChanges(t, dst, "model", history)
	if diff := cmp.Diff(rowsOf(t, src), rowsOf(t, dst)); diff != "" {
		t.Errorf("the restored store's rows differ from the original's (-original +restored):\n%s", diff)
	}
	if st := state(t, dst, "model"); len(st.Locks) != 0 {
		t.Errorf("the restored state has locks %+v; a backup carries none", st.Locks)
	}
	checkBackupLines(t, file.Bytes())

	t.Run("refuses a store that is not empty", func(t *testing.T) {
		before := freeze(t, dst, "model")
		_, err := backupStore(t, dst).Restore(ctx, bytes.NewReader(file.Bytes()), retention.RestoreLimits{})
		if re := errorAs[*kilolock.RefusedError](t, err); re.Code != "restore_target_not_empty" || !errors.Is(err, kilolock.ErrConflict) {
			t.Errorf("a restore into a store that is not empty = %v", err)
		}
		before.unchanged(t, dst, "model")
	})
	t.Run("refuses a damaged file and writes nothing", func(t *testing.T) {
		empty := to(t)
		whole := file.Bytes()
		flipped := slices.Clone(whole)
		flipped[len(flipped)/2] ^= 0x40
		for _, tt := range []struct {
			name string
			data []byte
		}{
			{"cut short", whole[:len(whole)/2]},
			{"cut at the end", whole[:len(whole)-4]},
			{"a flipped bit", flipped},
			{"not gzip", []byte(`{"kilolock_backup":1}`)},
			{"a newer format", gzipped(t, `{"kilolock_backup":99,"tables":[]}`+"\n")},
			{"an unknown table", gzipped(t, `{"kilolock_backup":1,"created":"2026-01-01T00:00:00Z","tables":[{"name":"tomorrow","columns":[]}]}`+"\n")},
			{"a row of the wrong shape", gzipped(t, `{"kilolock_backup":1,"created":"2026-01-01T00:00:00Z","tables":[{"name":"state_holds","columns":[{"name":"name","type":"text"},{"name":"lifecycle","type":"text"}]}]}`+"\n"+
				`{"table":"state_holds"}`+"\n"+`["x"]`+"\n")},
		} {
			_, err := backupStore(t, empty).Restore(ctx, bytes.NewReader(tt.data), retention.RestoreLimits{})
			if !errors.Is(err, kilolock.ErrInvalid) {
				t.Errorf("%s: Restore = %v, want ErrInvalid", tt.name, err)
			}
		}
		if sts, err := empty.States(ctx); err != nil || len(sts) != 0 {
			t.Fatalf("refused restores left states %+v, %v", sts, err)
		}
		if _, err := backupStore(t, empty).Restore(ctx, bytes.NewReader(whole), retention.RestoreLimits{}); err != nil {
			t.Errorf("the whole file into the store the refused restores left: %v (they must write nothing)", err)
		}
	})
	t.Run("refuses an altered file, and a line or a value past its limit", func(t *testing.T) {
		testRestoreRefusals(t, to, file.Bytes())
	})
	t.Run("goes on with new ids", func(t *testing.T) {
		var maxID int64
		for _, v := range history {
			maxID = max(maxID, v.version.ID)
		}
		c := next(t, dst, "model")
		c.Upserts = []graph.Instance{instance(t, resource("aws_instance", "after"), graph.IndexKey{}, `{"id":"after"}`)}
		if v := commit(t, dst, "model", c); v.ID <= maxID || v.Number != int64(len(history))+1 {
			t.Errorf("a commit after the restore made version %d with id %d; want %d with an id above %d", v.Number, v.ID, len(history)+1, maxID)
		}
		record(t, dst, "model", rejection("after", nil, nil))
		if ts, ok := dst.(tenancy.TenantStore); ok {
			e := &kilolock.AuditEntry{Actor: "after", Action: "test", Target: "x"}
			must(t, ts.AppendAudit(ctx, e))
			all, err := ts.Audit(ctx, kilolock.AuditFilter{Limit: 1000})
			must(t, err)
			if all[0].ID != e.ID || len(all) < 3 || e.ID <= all[1].ID {
				t.Errorf("an audit entry after the restore got id %d; newest entries %+v", e.ID, all[:min(3, len(all))])
			}
		}
	})
}

// backupStore returns s as a retention.BackupStore.
func backupStore(t testing.TB, s kilolock.Store) retention.BackupStore {
	t.Helper()
	bs, ok := s.(retention.BackupStore)
	if !ok {
		t.Fatalf("%T keeps no backups (retention.BackupStore)", s)
	}
	return bs
}

// fill gives s one of everything a backup carries and returns the model
// of its state "model".
func fill(t *testing.T, s kilolock.Store) []model {
	t.Helper()
	ctx := context.Background()
	history := commitModel(t, s, "model", 30, 20260601)
	record(t, s, "model", rejection("lost", []string{"aws_instance.web[0]", "output.\x00"}, &kilolock.Winner{Actor: "w", LockID: "won", Version: 3}))
	record(t, s, "model", rejection("alone", nil, nil))
	lock(t, s, "model", "held", kilolock.LockExclusive)

	// Strings a PostgreSQL text cannot hold, and JSON cannot carry.
	each := graph.Resource{Mode: "managed", Type: "terraform_data", Name: "x", Each: "map", Provider: `provider["terraform.io/builtin/terraform"]`}
	c := next(t, s, "odd")
	c.Version.Lineage = lineage + "\x00\xff"
	c.Version.Actor = "a\x00\xfe"
	c.Upserts = []graph.Instance{
		instance(t, each, strKey("a\x00b"), `{"id":"a\u0000b"}`),
		instance(t, each, strKey("\xff\xfe"), "{\"id\":\"\xff\",\"latin1\":\"caf\xe9\"}"),
	}
	c.OutputUpserts = []graph.Output{graph.NewOutput("o\x00", []byte("{\"value\":\"\xff\",\"type\":\"string\"}"))}
	c.CheckResults = []byte("[{\"status\":\"\xff\"}]")
	c.Raw = []byte{0x1f, 0x8b, 0, 0xff}
	commit(t, s, "odd", c)
	must(t, s.SetSharedPlanLocks(ctx, "odd", new(bool)))
	fillLong(t, s)
	must(t, s.SetLockMode(ctx, "empty", kilolock.LockOptimistic))
	commit(t, s, "enc", opaque(t, s, "enc", &kilolock.ClientEncryption{Version: "v0", KeyProviders: []kilolock.KeyProvider{{Type: "pbkdf2", Name: "team"}}}))
	must(t, s.SetRequireClientEncryption(ctx, "enc", true))

	if rs, ok := s.(kilolock.RunStore); ok {
		t0 := time.Now().UTC().Truncate(time.Second)
		a := newRun(t, rs, "model", "alice@laptop", t0, "aws_instance.web", "write", "aws_db_instance.db", "read")
		if _, _, err := rs.AcquireRun(ctx, a.ID, t0); err != nil {
			t.Fatal(err)
		}
		b := newRun(t, rs, "model", "bob@ci", t0, "null_resource.each", "write")
		if _, err := rs.EndRun(ctx, b.ID, kilolock.RunEnd{Status: kilolock.RunAborted, By: "carol", Reason: "stuck"}, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if qs, ok := s.(kilolock.QuotaStore); ok {
		must(t, qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "model"}, &quota.Limit{Soft: 40, Hard: 50}))
		must(t, qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "odd"}, &quota.Limit{Unlimited: true}))
		must(t, qs.RecordQuotaRefusal(ctx, "model", &kilolock.QuotaEvent{From: "state model",
			Verdict: quota.Verdict{Scope: quota.ScopeState, Target: "model", Level: quota.Exceed, Current: 45, Result: 60, Limit: quota.Limit{Soft: 40, Hard: 50}},
			LockID:  "refused", Actor: "mallory"}))
	}
	if ts, ok := s.(tenancy.TenantStore); ok {
		ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "acme", Kind: tenancy.WorkspaceOrganization}
		must(t, ts.CreateWorkspace(ctx, ws))
		must(t, ts.SetWorkspaceLifecycle(ctx, ws.ID, tenancy.LifecycleSuspended))
		env := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
		must(t, ts.CreateEnvironment(ctx, env))
		must(t, ts.SetEnvironmentRequireClientEncryption(ctx, env.PublicID, true))
		must(t, ts.PutMember(ctx, ws.ID, tenancy.Member{UserID: "alice", Role: tenancy.RoleOwner}))
		auto, _, err := tenancy.NewToken(tenancy.TokenAutomation)
		must(t, err)
		auto.EnvironmentID, auto.Scope, auto.Expires = env.PublicID, tenancy.ScopeReadWrite, time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		must(t, ts.CreateToken(ctx, auto))
		must(t, ts.TouchToken(ctx, auto.ID, time.Now().UTC()))
		pat, _, err := tenancy.NewToken(tenancy.TokenPersonal)
		must(t, err)
		pat.UserID = "alice"
		must(t, ts.CreateToken(ctx, pat))
		must(t, ts.PutGrant(ctx, &tenancy.Grant{TokenID: pat.ID, EnvironmentID: env.PublicID}))
		name, err := tenancy.TenantStateName(ws.ID, env.PublicID, "net")
		must(t, err)
		must(t, ts.SetStateLifecycle(ctx, name, tenancy.LifecycleArchived))
		for i := range 3 {
			must(t, ts.AppendAudit(ctx, &kilolock.AuditEntry{Actor: "operator", Action: "test", Target: fmt.Sprint(i), From: "127.0.0.1:1", Denied: i == 1, Reason: "r\x00", RequestID: "req"}))
		}
	}
	return history
}

// rowsOf is everything a backup of s carries, table by table, each
// table's rows as JSON lines in byte order (the databases' orders of text
// differ).
func rowsOf(t testing.TB, s kilolock.Store) map[string][]string { return dumpOf(t, s).rows }

// dump is what a backup of a store holds: each table's columns, and its
// rows as JSON lines in byte order.
type dump struct {
	columns map[string][]string
	rows    map[string][]string
}

func dumpOf(t testing.TB, s kilolock.Store) dump {
	t.Helper()
	var buf bytes.Buffer
	if _, err := backupStore(t, s).Backup(context.Background(), &buf); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	gz, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	d := dump{columns: map[string][]string{}, rows: map[string][]string{}}
	sc := bufio.NewScanner(gz)
	sc.Buffer(nil, 1<<30)
	table := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, `{"kilolock_backup":`):
			var h struct {
				Tables []struct {
					Name    string
					Columns []struct{ Name string }
				}
			}
			if err := json.Unmarshal([]byte(line), &h); err != nil {
				t.Fatal(err)
			}
			for _, ht := range h.Tables {
				for _, c := range ht.Columns {
					d.columns[ht.Name] = append(d.columns[ht.Name], c.Name)
				}
			}
		case strings.HasPrefix(line, `{"table":`):
			table = strings.Trim(strings.TrimPrefix(line, `{"table":`), `"}`)
			d.rows[table] = []string{}
		case strings.HasPrefix(line, "["):
			d.rows[table] = append(d.rows[table], line)
		case strings.HasPrefix(line, `"`):
			// A piece of a long value of the row before: compared with it.
			rows := d.rows[table]
			rows[len(rows)-1] += "\n" + line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, rows := range d.rows {
		slices.Sort(rows)
	}
	return d
}

// each calls f with each row of table as a map from column to its JSON
// value (numbers as json.Number).
func (d dump) each(t testing.TB, table string, f func(row map[string]any)) {
	t.Helper()
	for _, line := range d.rows[table] {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var cells []any
		if err := dec.Decode(&cells); err != nil {
			t.Fatal(err)
		}
		row := map[string]any{}
		for i, c := range d.columns[table] {
			row[c] = cells[i]
		}
		f(row)
	}
}

// gzipped is s compressed.
func gzipped(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	if _, err := gz.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
