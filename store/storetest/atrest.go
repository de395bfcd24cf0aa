package storetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/retention"
)

// AtRest is one database to test encryption at rest on.
type AtRest struct {
	// Open opens another store on the database with ring (nil for none)
	// and returns what the store's Open returned; the store is closed
	// when t ends.
	Open func(t testing.TB, ring *keyring.Ring) (kilolock.Store, error)
	// Dump returns what someone who reads the database without the store
	// sees: the SQLite file and its WAL, PostgreSQL's pg_dump.
	Dump func(t testing.TB) []byte
}

// AtRestOpener makes a new, empty database.
type AtRestOpener = func(t testing.TB) AtRest

// RunAtRest runs the encryption-at-rest suite: what Terraform marks
// sensitive, and raw documents, reach the database sealed, read back byte
// for byte, and a store opened without the right keys is refused.
func RunAtRest(t *testing.T, newDB AtRestOpener) {
	t.Run("SealedRoundTrip", func(t *testing.T) { testSealedRoundTrip(t, newDB(t)) })
	t.Run("KeysAtOpen", func(t *testing.T) { testKeysAtOpen(t, newDB(t)) })
	t.Run("Rotation", func(t *testing.T) { testRotation(t, newDB(t)) })
	t.Run("ReplicaWithoutKey", func(t *testing.T) { testReplicaWithoutKey(t, newDB(t)) })
	t.Run("Backup", func(t *testing.T) { testSealedBackup(t, newDB(t), newDB(t), newDB(t), newDB(t)) })
	t.Run("Drift", func(t *testing.T) { testSealedDrift(t, newDB(t)) })
	t.Run("Spellings", func(t *testing.T) { testSealedSpellings(t, newDB(t)) })
	// The inventory reads the masked copy a sealing store keeps: the same
	// answers, the secret still never found.
	t.Run("Inventory", func(t *testing.T) {
		db := newDB(t)
		testInventory(t, func(t testing.TB) kilolock.Store { return openAtRest(t, db, ring(t, keyring.Generate())) })
	})
}

// testSealedDrift: a drift check of an instance whose connection string
// embeds its sensitive password, the string changed on the real object,
// keeps the secret nowhere in the clear: not in the database (its file,
// pg_dump), not in a backup, not in the resource_drift view, which still
// shows what drifted.
func testSealedDrift(t *testing.T, db AtRest) {
	ctx := context.Background()
	s := openAtRest(t, db, ring(t, keyring.Generate()))
	if _, ok := s.(drift.DriftStore); !ok {
		t.Skip("the store keeps no drift checks")
	}
	password := secret(t, "pw")
	c := next(t, s, "secrets")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", password, "db-1.internal")}
	v := commit(t, s, "secrets", c)

	// The real object: moved to another host, its url (unmarked) still
	// holding the password.
	real := fmt.Sprintf(`{"host":"db-2.internal","password":%s,"port":5432,"url":%s}`, quote(password), quote("pg://admin:"+password+"@db-2.internal"))
	e := kilolock.NewEngine(s, kilolock.Options{})
	check, err := drift.RecordDrift(ctx, e, "secrets", &drift.DriftReport{Lineage: v.Lineage, Serial: v.Serial, Drifted: []drift.DriftedInstance{{
		Address: "aws_db_instance.main", Real: json.RawMessage(real), RealSensitive: json.RawMessage(`{"password":true}`),
	}}}, kilolock.Caller{Actor: "ci"})
	must(t, err)
	var paths []string
	for _, ch := range check.Drifted[0].Changes {
		paths = append(paths, ch.Path)
	}
	if strings.Join(paths, " ") != "host url" {
		t.Fatalf("the drift check found changes at %v, want host and url", paths)
	}

	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT address, kind, changes FROM resource_drift WHERE state = 'secrets'`)
	must(t, err)
	view := fmt.Sprint(res.Rows)
	if len(res.Rows) != 1 || !strings.Contains(view, "db-2.internal") || !strings.Contains(view, `"url"`) || !strings.Contains(view, graph.SensitiveMask) {
		t.Errorf("resource_drift = %s; want the drifted host, and the url masked", view)
	}
	var file bytes.Buffer
	_, err = backupStore(t, s).Backup(ctx, &file)
	must(t, err)
	zr, err := gzip.NewReader(&file)
	must(t, err)
	backup, err := io.ReadAll(zr)
	must(t, err)
	for where, b := range map[string][]byte{"the database": db.Dump(t), "a backup": backup, "resource_drift": []byte(view)} {
		if bytes.Contains(b, []byte(password)) {
			t.Errorf("%s (%d bytes) holds the password after a drift check", where, len(b))
		}
	}
	if !bytes.Contains(backup, []byte("db-2.internal")) {
		t.Errorf("the backup lacks the drifted host: it is not of this store")
	}
}

// testSealedSpellings: a POST of a sensitive instance and a plain one,
// in the CLI's layout, keeps the plain one's spelling and not the sealed
// one's (hashes of its clear bytes would tell what it holds), and its
// next POST through an engine that never cached it is exact.
func testSealedSpellings(t *testing.T, db AtRest) {
	ctx := context.Background()
	s := openAtRest(t, db, ring(t, keyring.Generate()))
	ir, ok := s.(kilolock.IndexReader)
	if !ok {
		t.Skip("the store is no IndexReader")
	}
	password := secret(t, "pw")
	plain := newInstance(t, resource("aws_instance", "web"), []byte(`{"schema_version":0,"attributes":{"id":"i-1"}}`))
	st := &graph.State{Version: 4, Serial: 1, Lineage: "l", Instances: []graph.Instance{sensitiveInstance(t, "main", password, "db-1.internal"), plain}}
	doc := st.Render(graph.FormatIndent)
	if _, err := kilolock.NewEngine(s, kilolock.Options{}).Write(ctx, "spelled", doc, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, hashes, spelled, err := ir.SnapshotHashes(ctx, "spelled", 1)
	must(t, err)
	if len(hashes) != 2 || len(spelled) != 1 {
		t.Fatalf("SnapshotHashes: %d hashes, %d spellings; want 2, and only the plain instance's", len(hashes), len(spelled))
	}
	for _, sp := range spelled {
		if sp.Hash != plain.Hash {
			t.Errorf("the spelling kept is of hash %x, not the plain instance's %x", sp.Hash[:4], plain.Hash[:4])
		}
	}
	st.Serial = 2
	st.Instances[1] = newInstance(t, resource("aws_instance", "web"), []byte(`{"schema_version":0,"attributes":{"id":"i-2"}}`))
	doc = st.Render(graph.FormatIndent)
	res, err := kilolock.NewEngine(s, kilolock.Options{}).Write(ctx, "spelled", doc, kilolock.WriteOptions{})
	if err != nil || res.Version.Changed != 1 {
		t.Fatalf("the next POST: %+v, %v; want 1 changed", res, err)
	}
	d, err := kilolock.NewEngine(s, kilolock.Options{}).Read(ctx, "spelled")
	if err != nil || !bytes.Equal(d.Bytes, doc) {
		t.Fatalf("read back: %v; want the bytes posted", err)
	}
}

// ring returns a keyring of new keys, the first active.
func ring(t testing.TB, keys ...string) *keyring.Ring {
	t.Helper()
	r, err := keyring.Parse([]byte(strings.Join(keys, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openAtRest(t testing.TB, db AtRest, r *keyring.Ring) kilolock.Store {
	t.Helper()
	s, err := db.Open(t, r)
	if err != nil {
		t.Fatalf("open with keys: %v", err)
	}
	return s
}

// secret is a value no database would hold by chance.
func secret(t testing.TB, what string) string {
	t.Helper()
	b := make([]byte, 12)
	rand.Read(b)
	return what + "-" + hex.EncodeToString(b)
}

// sensitiveInstance is a database password: its password attribute is
// marked sensitive, the rest is not, though its url holds the password too
// (as providers' connection strings do).
func sensitiveInstance(t testing.TB, name, password, host string) graph.Instance {
	t.Helper()
	obj := fmt.Sprintf(`{"schema_version":0,"attributes":{"host":%s,"password":%s,"port":5432,"url":%s},`+
		`"sensitive_attributes":[[{"type":"get_attr","value":"password"}]],"private":"eyJzY2hlbWFfdmVyc2lvbiI6IjAifQ=="}`,
		quote(host), quote(password), quote("pg://admin:"+password+"@"+host))
	return newInstance(t, resource("aws_db_instance", name), []byte(obj))
}

func testSealedRoundTrip(t *testing.T, db AtRest) {
	ctx := context.Background()
	s := openAtRest(t, db, ring(t, keyring.Generate()))
	password, token := secret(t, "pw"), secret(t, "token")
	host := secret(t, "host") // not sensitive: stays queryable
	db1 := sensitiveInstance(t, "main", password, host)
	plain := instance(t, resource("aws_instance", "web"), graph.IndexKey{}, `{"id":"i-1"}`)
	out := output("token", token, true)
	raw := []byte("kept document holding " + password)

	c := next(t, s, "secrets")
	c.Upserts = []graph.Instance{db1, plain}
	c.OutputUpserts = []graph.Output{out, output("endpoint", host, false)}
	c.Raw = raw
	v1 := commit(t, s, "secrets", c)

	snap, err := s.Snapshot(ctx, "secrets", v1.Number)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]graph.Instance{db1, plain}, snap.Instances, cmpOpts...); diff != "" {
		t.Errorf("Snapshot instances (-want +got):\n%s", diff)
	}
	if !bytes.Equal(snap.Raw, raw) {
		t.Errorf("Snapshot raw = %q, want %q", snap.Raw, raw)
	}
	if got := outputNamed(snap.Outputs, "token"); got == nil || !bytes.Equal(got.Object, out.Object) || got.Hash != out.Hash {
		t.Errorf("Snapshot output token = %+v, want %s", got, out.Object)
	}
	hist, err := s.InstanceHistory(ctx, "secrets", db1.Address())
	if err != nil || len(hist) != 1 || !bytes.Equal(hist[0].Instance.Object, db1.Object) {
		t.Fatalf("InstanceHistory = %+v, %v; want the object as committed", hist, err)
	}
	ins, outs, err := s.HashesAt(ctx, "secrets", v1.Number, []string{db1.ID(), plain.ID()}, []string{"token", "endpoint"})
	if err != nil || ins[db1.ID()] != db1.Hash || ins[plain.ID()] != plain.Hash || outs["token"] != out.Hash {
		t.Fatalf("HashesAt = %v %v, %v; want the content hashes", ins, outs, err)
	}
	if ir, ok := s.(kilolock.IndexReader); ok {
		_, hashes, _, err := ir.SnapshotHashes(ctx, "secrets", v1.Number)
		if err != nil || len(hashes) != 2 || hashes[db1.ID()] != db1.Hash || hashes[plain.ID()] != plain.Hash {
			t.Fatalf("SnapshotHashes = %v, %v; want the content hashes, not the sealed payloads' addresses", hashes, err)
		}
		some, err := ir.SnapshotSome(ctx, "secrets", v1.Number, []string{db1.ID()})
		if err != nil || len(some) != 1 || !bytes.Equal(some[0].Object, db1.Object) {
			t.Fatalf("SnapshotSome = %+v, %v; want the object as committed", some, err)
		}
	}

	// The same object again is no change; changing it and going back to
	// it finds its payload (its keyed address) already stored.
	c = next(t, s, "secrets")
	c.Upserts = []graph.Instance{db1}
	if v, stats, err := s.Commit(ctx, "secrets", c); err != nil || v.Changed != 0 || stats.Rows != 2 {
		t.Fatalf("re-commit of a sealed object = %+v, %+v, %v; want no change, 2 rows (version, state)", v, stats, err)
	}
	other := sensitiveInstance(t, "main", secret(t, "pw2"), host)
	c = next(t, s, "secrets")
	c.Upserts = []graph.Instance{other}
	commit(t, s, "secrets", c)
	c = next(t, s, "secrets")
	c.Upserts = []graph.Instance{db1}
	v4, stats, err := s.Commit(ctx, "secrets", c)
	if err != nil || v4.Changed != 1 || stats.Rows != 4 {
		t.Fatalf("back to the first object = %+v, %+v, %v; want 1 change in 4 rows (version, state, 2 intervals), no payload", v4, stats, err)
	}
	if snap, err := s.Snapshot(ctx, "secrets", v4.Number); err != nil || !bytes.Equal(instanceNamed(snap.Instances, db1.ID()).Object, db1.Object) {
		t.Fatalf("Snapshot after going back = %v; want the first object", err)
	}

	// The views show the rest and mask the secrets.
	// (raw_json holds the object where PostgreSQL's jsonb cannot, or
	// where its check errs on the side of no.)
	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT attributes, raw_json FROM resources WHERE state = 'secrets' AND type = 'aws_db_instance'`)
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("query resources = %+v, %v", res, err)
	}
	attrs := fmt.Sprint(res.Rows[0])
	if !strings.Contains(attrs, host) || !strings.Contains(attrs, graph.SensitiveMask) || strings.Contains(attrs, password) {
		t.Errorf("resources.attributes = %s; want the host, and the password masked", attrs)
	}
	res, err = s.Query(ctx, kilolock.QueryLimits{}, `SELECT value, raw_json FROM outputs WHERE state = 'secrets' AND name = 'token'`)
	if err != nil || len(res.Rows) != 1 || strings.Contains(fmt.Sprint(res.Rows[0]), token) || !strings.Contains(fmt.Sprint(res.Rows[0]), graph.SensitiveMask) {
		t.Errorf("outputs.value of a sensitive output = %+v, %v; want it masked", res, err)
	}

	// A dump holds none of the secrets' bytes, nor their content hashes,
	// but does hold what is not secret.
	dump := db.Dump(t)
	for what, b := range map[string][]byte{
		"the password": []byte(password), "the token": []byte(token),
		"the instance's content hash": db1.Hash[:], "its hash in hex": []byte(db1.Hash.String()),
		"the output's content hash": out.Hash[:],
	} {
		if bytes.Contains(dump, b) {
			t.Errorf("the database dump (%d bytes) holds %s", len(dump), what)
		}
	}
	if !bytes.Contains(dump, []byte(host)) {
		t.Errorf("the database dump (%d bytes) does not hold the host, which is not secret: the dump is not of this database", len(dump))
	}
}

func testKeysAtOpen(t *testing.T, db AtRest) {
	k1, k2 := keyring.Generate(), keyring.Generate()
	s := openAtRest(t, db, ring(t, k1))
	c := next(t, s, "db")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", secret(t, "pw"), "h")}
	commit(t, s, "db", c)
	id := ring(t, k1).Active()

	tests := []struct {
		name string
		ring *keyring.Ring
		code string
	}{
		{"no key", nil, "encryption_key_missing"},
		{"another key", ring(t, k2), "encryption_key_unknown"},
		{"the key, not first", ring(t, k2, k1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.Open(t, tt.ring)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Snapshot(context.Background(), "db", 1); err != nil {
					t.Fatalf("Snapshot with the key second in the ring: %v", err)
				}
				return
			}
			ke := errorAs[*kilolock.KeyError](t, err)
			errorIs(t, err, kilolock.ErrKey)
			if ke.Code != tt.code || len(ke.Needed) != 1 || ke.Needed[0] != id || !strings.Contains(ke.Error(), id) || ke.Hint == "" {
				t.Fatalf("KeyError = %+v; want code %s naming key %s, with a hint", ke, tt.code, id)
			}
		})
	}
}

func testRotation(t *testing.T, db AtRest) {
	ctx := context.Background()
	oldKey, newKey := keyring.Generate(), keyring.Generate()
	s := openAtRest(t, db, ring(t, oldKey))
	passwords := map[string]string{}
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		passwords[name] = secret(t, "pw")
		c := next(t, s, name)
		c.Upserts = []graph.Instance{sensitiveInstance(t, "main", passwords[name], "h")}
		commit(t, s, name, c)
	}
	oldID, newID := ring(t, oldKey).Active(), ring(t, newKey).Active()

	rotated := openAtRest(t, db, ring(t, newKey, oldKey))
	ks := rotated.(kilolock.KeyStore)
	usage, err := ks.KeyUsage(ctx)
	want := []kilolock.KeyUsage{{KeyID: newID, Configured: true, Active: true}, {KeyID: oldID, States: 5, Configured: true}}
	if err != nil || !cmp.Equal(usage, want) {
		t.Fatalf("KeyUsage before = %+v, %v; want %+v", usage, err, want)
	}
	// A new state gets a data key wrapped by the new key at once.
	c := next(t, rotated, "fresh")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", secret(t, "pw"), "h")}
	commit(t, rotated, "fresh", c)

	var done int64
	for {
		n, remaining, err := ks.RewrapKeys(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		done += n
		if n > 2 || remaining != 5-done {
			t.Fatalf("RewrapKeys(2) = %d, %d remaining after %d done; want at most 2 a call", n, remaining, done)
		}
		if remaining == 0 {
			break
		}
	}
	usage, err = ks.KeyUsage(ctx)
	want = []kilolock.KeyUsage{{KeyID: newID, States: 6, Configured: true, Active: true}, {KeyID: oldID, Configured: true}}
	if err != nil || !cmp.Equal(usage, want) {
		t.Fatalf("KeyUsage after = %+v, %v; want %+v", usage, err, want)
	}
	// The old key can go: the new one alone opens everything; the old
	// one alone no longer does.
	onlyNew := openAtRest(t, db, ring(t, newKey))
	for name, pw := range passwords {
		snap, err := onlyNew.Snapshot(ctx, name, 1)
		if err != nil || !bytes.Contains(snap.Instances[0].Object, []byte(pw)) {
			t.Fatalf("Snapshot(%s) with only the new key = %v; want the password back", name, err)
		}
	}
	if _, err := db.Open(t, ring(t, oldKey)); !strings.Contains(fmt.Sprint(err), newID) {
		t.Fatalf("open with only the old key = %v; want a KeyError naming %s", err, newID)
	}
	// A process still on the old ring alone cannot re-wrap back.
	_, _, err = s.(kilolock.KeyStore).RewrapKeys(ctx, 10)
	errorIs(t, err, kilolock.ErrKey)
}

// A replica started before encryption was turned on never writes a sealed
// state's secrets in the clear: it refuses.
func testReplicaWithoutKey(t *testing.T, db AtRest) {
	ctx := context.Background()
	old, err := db.Open(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := openAtRest(t, db, ring(t, keyring.Generate()))
	c := next(t, s, "db")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", secret(t, "pw"), "h")}
	commit(t, s, "db", c)

	pw := secret(t, "pw")
	c = next(t, old, "db")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", pw, "h")}
	_, _, err = old.Commit(ctx, "db", c)
	errorIs(t, err, kilolock.ErrKey)
	_, err = old.Snapshot(ctx, "db", 1)
	errorIs(t, err, kilolock.ErrKey)
	if bytes.Contains(db.Dump(t), []byte(pw)) {
		t.Fatal("the refused write's secret reached the database")
	}
}

// A backup of an encrypted store carries the secrets sealed: the file
// holds none of their bytes, a store restored from it with the keys reads
// every version back byte for byte, one without them is refused at open
// (or, restoring into it, refused before it writes a row), and one whose
// sealed values were edited is refused.
func testSealedBackup(t *testing.T, from, to, keyless, edited AtRest) {
	ctx := context.Background()
	keys := ring(t, keyring.Generate())
	src := openAtRest(t, from, keys)
	password, token := secret(t, "pw"), secret(t, "token")
	db1 := sensitiveInstance(t, "main", password, "db.internal")
	c := next(t, src, "secrets")
	c.Upserts = []graph.Instance{db1}
	c.OutputUpserts = []graph.Output{output("token", token, true)}
	c.Raw = []byte("kept document holding " + password)
	v1 := commit(t, src, "secrets", c)
	c = next(t, src, "secrets")
	c.Upserts = []graph.Instance{sensitiveInstance(t, "main", secret(t, "pw2"), "db.internal")}
	v2 := commit(t, src, "secrets", c)

	var file bytes.Buffer
	if _, err := backupStore(t, src).Backup(ctx, &file); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for what, b := range map[string][]byte{"the password": []byte(password), "the token": []byte(token)} {
		if bytes.Contains(plain, b) {
			t.Errorf("the backup (%d bytes uncompressed) holds %s", len(plain), what)
		}
	}
	if !bytes.Contains(plain, []byte("db.internal")) {
		t.Errorf("the backup does not hold the host, which is not secret: it is not of this store")
	}

	dst := openAtRest(t, to, keys)
	if _, err := backupStore(t, dst).Restore(ctx, bytes.NewReader(file.Bytes()), retention.RestoreLimits{}); err != nil {
		t.Fatalf("Restore with the keys: %v", err)
	}
	for _, v := range []*kilolock.Version{v1, v2} {
		want, err := src.Snapshot(ctx, "secrets", v.Number)
		must(t, err)
		got, err := dst.Snapshot(ctx, "secrets", v.Number)
		must(t, err)
		if diff := cmp.Diff(want.Instances, got.Instances, cmpOpts...); diff != "" || !bytes.Equal(want.Raw, got.Raw) {
			t.Errorf("restored @%d (-original +restored):\n%s raw %q / %q", v.Number, diff, want.Raw, got.Raw)
		}
	}
	if _, err := to.Open(t, nil); !errors.Is(err, kilolock.ErrKey) {
		t.Errorf("opening the restored store without its key = %v, want a KeyError", err)
	}

	// A sealed object or document edited in the file does not open with
	// its state's key: refused, nothing written.
	altered := openAtRest(t, edited, keys)
	for table, column := range map[string]string{"payloads": "sealed", "version_raw": "raw"} {
		file := alteredBackup(t, file.Bytes(), table, func(row map[string]any) bool {
			s, ok := row[column].(string)
			if !ok || (table == "version_raw" && row["sealed"] != true) {
				return false
			}
			flip := byte('A')
			if s[20] == 'A' {
				flip = 'B'
			}
			row[column] = s[:20] + string(flip) + s[21:]
			return true
		})
		_, err := backupStore(t, altered).Restore(ctx, bytes.NewReader(file), retention.RestoreLimits{})
		if ie := errorAs[*kilolock.InvalidError](t, err); ie.Code != "backup_content_mismatch" {
			t.Errorf("a backup with an edited %s.%s: %v, want backup_content_mismatch", table, column, err)
		}
	}
	if st, err := altered.States(ctx); err != nil || len(st) != 0 {
		t.Errorf("refused restores left states %v, %v", st, err)
	}

	bare, err := keyless.Open(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = backupStore(t, bare).Restore(ctx, bytes.NewReader(file.Bytes()), retention.RestoreLimits{})
	errorIs(t, err, kilolock.ErrKey)
	if st, err := bare.States(ctx); err != nil || len(st) != 0 {
		t.Errorf("a refused restore left states %v, %v", st, err)
	}
}

func outputNamed(outs []graph.Output, name string) *graph.Output {
	for i := range outs {
		if outs[i].Name == name {
			return &outs[i]
		}
	}
	return nil
}

func instanceNamed(ins []graph.Instance, id string) *graph.Instance {
	for i := range ins {
		if ins[i].ID() == id {
			return &ins[i]
		}
	}
	return &graph.Instance{}
}

// FileDump is the AtRest.Dump of an SQLite database at path: the file and
// its WAL, as they lie on disk.
func FileDump(t testing.TB, path string) []byte {
	t.Helper()
	var dump []byte
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		dump = append(dump, b...)
	}
	return dump
}
