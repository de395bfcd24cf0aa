package klcli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/internal/progress"
)

// TestTransferProgress: import and export report their steps to a
// terminal on every backend, and kl shows nothing when stderr is not a
// terminal.
func TestTransferProgress(t *testing.T) {
	doc := []byte(`{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"p","outputs":{},"resources":[],"check_results":null}` + "\n")
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			open, _ := be.open(t, openEngine(t, sqliteURL(t)))
			b := open(nil)
			var term, out bytes.Buffer
			cli := &klcli.CLI{Conn: b, Out: &out, Progress: progress.NewTerminal(&term)}
			if err := cli.Import(context.Background(), "p", "p.tfstate", doc, false); err != nil {
				t.Fatal(err)
			}
			if err := cli.Export(context.Background(), "p", kilolock.Latest); err != nil {
				t.Fatal(err)
			}
			want := map[string][]string{"engine": {"parse and store p", "read and render p"}, "http": {"send /v1/api/states/p/import", "receive /v1/api/states/p/export"}}[be.name]
			for _, w := range want {
				if !strings.Contains(term.String(), w) {
					t.Errorf("progress lacks %q:\n%q", w, term.String())
				}
			}
		})
	}
	t.Run("not a terminal", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "p.tfstate")
		os.WriteFile(file, doc, 0o644)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		g := &klcli.Globals{Database: filepath.Join(dir, "kl.db"), Out: &out, Stderr: w}
		if err := (&klcli.ImportCmd{Name: "p", File: file}).Run(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if shown, _ := io.ReadAll(r); len(shown) != 0 {
			t.Errorf("kl import wrote %q to a stderr that is no terminal", shown)
		}
		if !strings.Contains(out.String(), "Imported") {
			t.Errorf("output %q", out.String())
		}
	})
}
