package e2e_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
)

// TestBackupRoundTrip moves a store made by the real CLI, by hand-written
// documents and by kl from SQLite to PostgreSQL and back with kl backup and
// kl restore, taken while kld serves: at every stop kl history (JSON) is
// the same, and every version's GET and kl export give the same bytes. A
// backup through kld's API needs the operator token.
func TestBackupRoundTrip(t *testing.T) {
	tofu.Binary(t)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.db")
	srv := setup(t, first)

	wd := tofu.NewWorkdir(t, srv.Backend("app")+smallConfig("v1"))
	wd.Must("init", "-input=false")
	for _, rev := range []string{"v1", "v2", "v3"} {
		wd.WriteFile("main.tf", srv.Backend("app")+smallConfig(rev))
		wd.Must("apply", "-auto-approve", "-input=false")
	}
	// A client's document in its own layout: kept byte for byte.
	for serial, indent := range []string{"\t", "      "} {
		doc := fmt.Sprintf("{\n%[1]s\"version\": 4,\n%[1]s\"terraform_version\": \"1.9.0\",\n%[1]s\"serial\": %[2]d,\n%[1]s\"lineage\": \"hand-made\",\n%[1]s\"outputs\": {\"x\": {\"value\": \"caf\u00e9 \\u00e9\", \"type\": \"string\"}},\n%[1]s\"resources\": [], \"check_results\": null\n}\n", indent, serial+1)
		if code, body := request(t, "POST", srv.StateURL("handmade"), []byte(doc)); code != 200 {
			t.Fatalf("POST handmade: %d %s", code, body)
		}
	}
	mustKL(t, "--server", srv.URL, "state", "rm", "app", "--address", `terraform_data.named["beta"]`)
	names := []string{"app", "handmade"}
	want := snapshotOf(t, srv, names)
	if len(want.versions["app"]) < 4 || len(want.versions["handmade"]) != 2 {
		t.Fatalf("the fixture has versions %v", want.versions)
	}

	// SQLite → PostgreSQL, the backup taken online, while kld serves.
	f1 := filepath.Join(dir, "one.json.gz")
	out := mustKL(t, "--database", first, "backup", "-o", f1)
	if !strings.Contains(out, "Backed up") || !strings.Contains(out, "state_versions") {
		t.Errorf("kl backup said:\n%s", out)
	}
	pg := testpg.URL(t)
	if out := mustKL(t, "--database", pg, "restore", f1); !strings.Contains(out, "Restored") {
		t.Errorf("kl restore said:\n%s", out)
	}
	srvPG := setup(t, pg)
	want.equal(t, "PostgreSQL", snapshotOf(t, srvPG, names))

	// A second restore into the same database is refused, and changes nothing.
	if _, errOut, code := kl(t, "--database", pg, "restore", f1); code == 0 || !strings.Contains(errOut, "empty") {
		t.Errorf("kl restore into a store that is not empty: exit %d, %s", code, errOut)
	}

	// PostgreSQL → SQLite.
	f2 := filepath.Join(dir, "two.json.gz")
	mustKL(t, "--database", pg, "backup", "-o", f2)
	last := filepath.Join(dir, "last.db")
	mustKL(t, "--database", last, "restore", f2)
	srvLast := setup(t, last)
	want.equal(t, "SQLite again", snapshotOf(t, srvLast, names))

	// Through kld's API: closed without authentication, the operator
	// token's with it.
	f3 := filepath.Join(dir, "three.json.gz")
	if _, errOut, code := kl(t, "--server", srvLast.URL, "backup", "-o", f3); code == 0 || !strings.Contains(errOut, "without authentication") {
		t.Errorf("kl backup from an open server: exit %d, %s", code, errOut)
	}
	if err := srvLast.Stop(); err != nil {
		t.Fatal(err)
	}
	authed := tofu.StartKLD(t, last, "--auth=token", "--operator-token="+operatorSecret)
	if _, errOut, code := kl(t, "--server", authed.URL, "--token", "klo_wrong", "backup", "-o", f3); code == 0 {
		t.Errorf("kl backup with a wrong token: exit 0, %s", errOut)
	}
	out = mustKL(t, "--server", authed.URL, "--token", operatorSecret, "backup", "-o", f3, "--json")
	var sum struct {
		Store  string `json:"store"`
		Tables []struct {
			Name string `json:"name"`
			Rows int64  `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Store != "sqlite" {
		t.Fatalf("kl backup --json through the API: %v\n%s", err, out)
	}
	again := filepath.Join(dir, "again.db")
	mustKL(t, "--database", again, "restore", f3)
	want.equal(t, "restored from the API's backup", snapshotOf(t, setup(t, again), names))
}

// storeSnapshot is what a user sees of states: kl history --json, and each
// version's GET and kl export.
type storeSnapshot struct {
	history  map[string]string
	versions map[string][]int64
	gets     map[string][]byte // "name@N"
	exports  map[string][]byte
}

func snapshotOf(t *testing.T, srv *tofu.Server, names []string) storeSnapshot {
	t.Helper()
	s := storeSnapshot{history: map[string]string{}, versions: map[string][]int64{}, gets: map[string][]byte{}, exports: map[string][]byte{}}
	for _, name := range names {
		s.history[name] = mustKL(t, "--server", srv.URL, "history", name, "--json", "--limit", "1000")
		for _, v := range history(t, srv, name) {
			s.versions[name] = append(s.versions[name], v.Number)
			key := fmt.Sprintf("%s@%d", name, v.Number)
			code, body := request(t, "GET", fmt.Sprintf("%s/v1/api/states/%s/versions/%d", srv.URL, name, v.Number), nil)
			if code != 200 {
				t.Fatalf("GET %s: %d %s", key, code, body)
			}
			s.gets[key] = body
			s.exports[key] = []byte(mustKL(t, "--server", srv.URL, "export", name, fmt.Sprintf("@%d", v.Number)))
		}
	}
	return s
}

// equal fails t where got differs from s.
func (s storeSnapshot) equal(t *testing.T, where string, got storeSnapshot) {
	t.Helper()
	for name, h := range s.history {
		if got.history[name] != h {
			t.Errorf("%s: kl history %s differs:\n%s\nwant:\n%s", where, name, got.history[name], h)
		}
	}
	for key, b := range s.gets {
		if !bytes.Equal(got.gets[key], b) {
			t.Errorf("%s: GET %s differs (%d bytes, want %d)", where, key, len(got.gets[key]), len(b))
		}
		if !bytes.Equal(got.exports[key], s.exports[key]) {
			t.Errorf("%s: kl export %s differs", where, key)
		}
	}
	if len(got.gets) != len(s.gets) {
		t.Errorf("%s: %d versions, want %d", where, len(got.gets), len(s.gets))
	}
}

// TestRestoreRefusesAlteredBackup: a backup of a store made by the real
// CLI, with one instance object edited and compressed again, is refused by
// kl restore, which names the state and the mismatch and writes nothing:
// the same database then takes the unaltered file, and kld serves it.
func TestRestoreRefusesAlteredBackup(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("app")+smallConfig("v1"))
		wd.Must("init", "-input=false")
		wd.Must("apply", "-auto-approve", "-input=false")
		dir := t.TempDir()
		whole := filepath.Join(dir, "whole.json.gz")
		mustKL(t, "--database", databaseURL, "backup", "-o", whole)

		zr, err := gzip.NewReader(bytes.NewReader(readFile(t, whole)))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(plain, []byte("counted-1-v1")) {
			t.Fatalf("the backup lacks counted[1]'s input: %v", err)
		}
		var edited bytes.Buffer
		zw := gzip.NewWriter(&edited)
		zw.Write(bytes.ReplaceAll(plain, []byte("counted-1-v1"), []byte("counted-1-vX")))
		zw.Close()
		altered := filepath.Join(dir, "altered.json.gz")
		if err := os.WriteFile(altered, edited.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}

		target := filepath.Join(dir, "restored.db") // a new database of the same store
		if strings.Contains(databaseURL, "://") {
			target = testpg.URL(t)
		}
		_, errOut, code := kl(t, "--database", target, "restore", altered)
		if code == 0 || !strings.Contains(errOut, "state app in the backup") || !strings.Contains(errOut, "does not hash") || !strings.Contains(errOut, "nothing was restored") {
			t.Fatalf("kl restore of an altered backup: exit %d\n%s", code, errOut)
		}
		mustKL(t, "--database", target, "restore", whole)
		restored := setup(t, target)
		if got, want := getState(t, restored, "app"), getState(t, srv, "app"); !bytes.Equal(got, want) {
			t.Errorf("the unaltered backup restored after the refusal serves other bytes:\n%s\nwant:\n%s", got, want)
		}
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreHugeLine: a backup file of about a megabyte that holds one
// line of 1 GiB (as the probe's 3 MB file held one of 3 GB, which drove kl
// restore to 4.2 GB of memory) is refused by the real kl restore, naming
// the line and the limit, with nothing restored, its peak memory a small
// fraction of the line: kl reads no further than the limit. Both stores.
func TestRestoreHugeLine(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		const line = 1 << 30
		file := filepath.Join(t.TempDir(), "huge.json.gz")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
		io.WriteString(zw, `{"kilolock_backup":2,"created":"2026-01-01T00:00:00Z","tables":[{"name":"state_holds","columns":[{"name":"name","type":"text"},{"name":"lifecycle","type":"text"}]}]}`+"\n"+`{"table":"state_holds"}`+"\n"+`["`)
		block := bytes.Repeat([]byte("a"), 1<<20)
		for written := 0; written < line; written += len(block) {
			zw.Write(block)
		}
		io.WriteString(zw, `","active"]`+"\n")
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		info, _ := os.Stat(file)

		target := filepath.Join(t.TempDir(), "restored.db") // a new database of the same store
		if strings.Contains(databaseURL, "://") {
			target = testpg.URL(t)
		}
		cmd := exec.CommandContext(t.Context(), tofu.BuildKL(t), "--database", target, "restore", file)
		cmd.Env = append(tofu.CleanEnv("KL_"), "NO_COLOR=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		if cmd.ProcessState == nil {
			t.Fatalf("kl restore did not run: %s", stderr.String())
		}
		errOut := stderr.String()
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(errOut, "backup line 3 is longer than") || !strings.Contains(errOut, "nothing was restored") {
			t.Fatalf("kl restore of a file (%d bytes) holding a line of 1 GiB: exit %d\n%s", info.Size(), cmd.ProcessState.ExitCode(), errOut)
		}
		rss := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // KiB on Linux
		t.Logf("FIGURE restore: kl restore refused a line of 1 GiB (a %d-byte file) at a peak RSS of %d MiB", info.Size(), rss>>20)
		if rss > line/4 {
			t.Errorf("kl restore refusing a line of 1 GiB peaked at %d MiB: it read the line, not up to its limit", rss>>20)
		}
		if out := mustKL(t, "--database", target, "states"); strings.Contains(out, "state_holds") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("kl states after the refused restore:\n%s", out)
		}
	})
}
