package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/inventory"
)

// TestSearch: kl search answers the same through a server and on the
// database: hits with state, version, address and matched paths, pages
// read until --limit, bad filters refused as invalid input, duplicates.
func TestSearch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		run := func(json bool, f func(*klcli.CLI) error) (string, error) {
			var out bytes.Buffer
			err := f(&klcli.CLI{Conn: h.raw, Out: &out, JSON: json})
			return out.String(), err
		}
		out, err := run(false, func(c *klcli.CLI) error {
			return c.Search(ctx, inventory.Filters{Type: "terraform_data", Attr: []string{"input.value=v2"}}, 100)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "STATE  VERSION  ADDRESS           MATCHED\nprod   3        terraform_data.a  input.value\n(1 hit)\n"
		if out != want {
			t.Errorf("kl search --type terraform_data --attr input.value=v2:\n%s\nwant:\n%s", out, want)
		}

		out, err = run(true, func(c *klcli.CLI) error {
			return c.Search(ctx, inventory.Filters{Address: "terraform_data.c[0]"}, 100)
		})
		var page inventory.Page
		if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Hits) != 1 || page.Hits[0].State != "prod" || page.Hits[0].Version != 3 {
			t.Errorf("kl search --address terraform_data.c[0] --json: %v\n%s", err, out)
		}

		// Pages: --limit 2 of 4 instances says more follow; --limit 3 reads
		// pages of 3 at most; the JSON's next resumes.
		out, _ = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{}, 2) })
		if !strings.Contains(out, "(2 hits; more follow") {
			t.Errorf("kl search --limit 2:\n%s", out)
		}
		out, _ = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{Text: "5B0D7F3C"}, 100) })
		if strings.Count(out, "prod ") != 3 || !strings.Contains(out, "(3 hits)") {
			t.Errorf("kl search --text 5B0D7F3C:\n%s", out)
		}

		_, err = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{Attr: []string{"nope"}}, 100) })
		var report strings.Builder
		klcli.Report(&report, err)
		if !errors.Is(err, kilolock.ErrInvalid) || !strings.Contains(report.String(), "PATH=VALUE") || !strings.Contains(report.String(), "hint: ") {
			t.Errorf("kl search --attr nope: %v\n%s", err, report.String())
		}

		out, err = run(false, func(c *klcli.CLI) error { return c.Duplicates(ctx, "") })
		if err != nil || !strings.HasSuffix(out, "(0 objects managed by more than one state)\n") {
			t.Errorf("kl search --duplicates: %v\n%s", err, out)
		}
	})
}
