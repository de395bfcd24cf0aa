package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// netModule is module.net: a vpc and two subnets depending on it, three
// instances.
const netModule = `resource "terraform_data" "vpc" {
  input = "vpc"
}

resource "terraform_data" "subnet" {
  count = 2
  input = "subnet-${count.index}-${terraform_data.vpc.id}"
}
`

// moveConfig is a configuration on backend with the given blocks.
func moveConfig(backend string, blocks ...string) string {
	return backend + strings.Join(blocks, "\n")
}

const (
	netBlock   = "module \"net\" {\n  source = \"./modules/net\"\n}\n"
	appBlock   = "resource \"terraform_data\" \"app\" {\n  input = \"app\"\n}\n"
	otherBlock = "resource \"terraform_data\" \"other\" {\n  input = \"other\"\n}\n"
)

// slowBlock is a resource whose creation holds the apply (and its lock)
// for a few seconds; rev replaces it.
func slowBlock(name, rev string) string {
	return fmt.Sprintf(`resource "terraform_data" %q {
  input = %q
  provisioner "local-exec" {
    command = "sleep 4"
  }
}
`, name, rev)
}

func writeNet(t *testing.T, wd *tofu.Workdir) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(wd.Dir, "modules", "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	wd.WriteFile("modules/net/main.tf", netModule)
}

// planClean fails t unless `tofu plan -detailed-exitcode` finds nothing
// to do.
func planClean(t *testing.T, wd *tofu.Workdir, when string) {
	t.Helper()
	wd.Must("init", "-no-color")
	if stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Fatalf("plan %s: exit %d, want 0\n%s\n%s", when, code, stdout, stderr)
	}
}

// locked reports whether state name has a holder, as the API says.
func locked(t *testing.T, srv *tofu.Server, name string) bool {
	t.Helper()
	code, b := request(t, http.MethodGet, srv.URL+"/v1/api/states/"+name, nil)
	return code == http.StatusOK && strings.Contains(string(b), `"locks":[{`)
}

// TestMovesWithTofu: module.net moves from state a to state b, its HCL
// follows, and both plans are clean; the same for a split and a merge; a
// move into a state an apply holds is refused with both histories
// unchanged; a move racing an apply on the source lands whole or not at
// all.
func TestMovesWithTofu(t *testing.T) {
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		server := []string{"--server", srv.URL}
		klDo := func(args ...string) string { t.Helper(); return mustKL(t, append(slices.Clone(server), args...)...) }

		a := tofu.NewWorkdir(t, moveConfig(srv.Backend("a"), netBlock, appBlock))
		writeNet(t, a)
		a.Must("init", "-no-color")
		a.Must("apply", "-auto-approve", "-no-color")
		b := tofu.NewWorkdir(t, moveConfig(srv.Backend("b"), otherBlock))
		b.Must("init", "-no-color")
		b.Must("apply", "-auto-approve", "-no-color")

		// mv module.net a -> b, in one transaction; then the HCL.
		out := klDo("state", "mv", "a", "module.net", "--to-state", "b", "--dry-run")
		if !strings.Contains(out, "Would move 3 instance(s) from a to b") || len(history(t, srv, "a")) != 1 {
			t.Fatalf("dry run:\n%s", out)
		}
		out = klDo("state", "mv", "a", "module.net", "--to-state", "b")
		if !strings.Contains(out, "Moved 3 instance(s)") || !strings.Contains(out, "would try to create the objects again") {
			t.Errorf("kl state mv --to-state:\n%s", out)
		}
		t.Logf("kl state mv --to-state:\n%s", out)
		if ha, hb := history(t, srv, "a")[0], history(t, srv, "b")[0]; ha.Source != "move" || hb.Source != "move" {
			t.Errorf("newest versions: a %+v, b %+v", ha, hb)
		}
		a.WriteFile("main.tf", moveConfig(srv.Backend("a"), appBlock))
		b.WriteFile("main.tf", moveConfig(srv.Backend("b"), netBlock, otherBlock))
		writeNet(t, b)
		planClean(t, a, "of a after the move")
		planClean(t, b, "of b after the move")
		if got := stateList(t, b); len(got) != 4 {
			t.Errorf("b holds %v", got)
		}

		// split: terraform_data.other out of b into the new state c.
		klDo("state", "split", "b", "--to-state", "c", "--address", "terraform_data.other")
		c := tofu.NewWorkdir(t, moveConfig(srv.Backend("c"), otherBlock))
		b.WriteFile("main.tf", moveConfig(srv.Backend("b"), netBlock))
		planClean(t, b, "of b after the split")
		planClean(t, c, "of c after the split")

		// merge: c into a, c archived.
		out = klDo("state", "merge", "c", "--into", "a", "--json")
		if !strings.Contains(out, `"archived": true`) && !strings.Contains(out, `"archived":true`) {
			t.Errorf("kl state merge --json:\n%s", out)
		}
		a.WriteFile("main.tf", moveConfig(srv.Backend("a"), appBlock, otherBlock))
		planClean(t, a, "of a after the merge")

		// A move into b while an apply holds b: refused, nothing changed.
		b.WriteFile("main.tf", moveConfig(srv.Backend("b"), netBlock, slowBlock("slow", "1")))
		b.Must("init", "-no-color")
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		apply := b.Command(ctx, tofu.Binary(t), "apply", "-auto-approve", "-no-color")
		if err := apply.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); !locked(t, srv, "b"); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the apply of b never locked it")
			}
		}
		ha, hb := len(history(t, srv, "a")), len(history(t, srv, "b"))
		stdout, stderr, code := kl(t, append(slices.Clone(server), "state", "mv", "a", "terraform_data.app", "--to-state", "b")...)
		if code == 0 || !strings.Contains(stderr+stdout, "state_locked") && !strings.Contains(stderr+stdout, "locked") {
			t.Errorf("move into b under an apply: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if len(history(t, srv, "a")) != ha || !locked(t, srv, "b") && len(history(t, srv, "b")) != hb+1 {
			t.Errorf("a refused move changed a history")
		}
		if err := apply.Wait(); err != nil {
			t.Fatalf("the apply of b: %v", err)
		}
		planClean(t, b, "of b after its apply")

		// A move racing an apply on the source (targeted at its slow
		// resource): the move lands whole before the apply locks a, or is
		// refused while the apply holds it; the apply's commit is never
		// refused for it, and terraform_data.other ends in exactly one
		// state.
		a.WriteFile("main.tf", moveConfig(srv.Backend("a"), appBlock, otherBlock, slowBlock("slow_a", "1")))
		a.Must("init", "-no-color")
		apply = a.Command(ctx, tofu.Binary(t), "apply", "-auto-approve", "-no-color", "-target=terraform_data.slow_a")
		if err := apply.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- apply.Wait() }()
		var moved, refused bool
		var applyErr error
	race:
		for !moved {
			select {
			case applyErr = <-done:
				break race
			default:
			}
			_, _, code := kl(t, append(slices.Clone(server), "state", "mv", "a", "terraform_data.other", "--to-state", "b")...)
			moved, refused = code == 0, refused || code != 0
		}
		if !moved {
			klDo("state", "mv", "a", "terraform_data.other", "--to-state", "b")
		} else {
			applyErr = <-done
		}
		if applyErr != nil {
			t.Fatalf("the apply racing the move failed: %v", applyErr)
		}
		all := append(stateList(t, a), stateList(t, b)...)
		slices.Sort(all)
		if n := len(slices.Compact(slices.Clone(all))); n != len(all) || !slices.Contains(all, "terraform_data.other") || !slices.Contains(stateList(t, a), "terraform_data.slow_a") {
			t.Fatalf("after the race the states hold %v: an instance in both or in neither", all)
		}
		t.Logf("race: the move was refused while the apply held a: %v", refused)
	})
}
