package klcli_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/store"
)

// completions returns what kl offers a shell for line, as kongplete
// filters it for the word being typed.
func completions(t *testing.T, line string) []string {
	t.Helper()
	var app klcli.App
	parser, err := kong.New(&app, kong.Name("kl"), klcli.Vars())
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := kongplete.Command(parser, kongplete.WithPredictor("state", klcli.StatePredictor))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COMP_LINE", line)
	words := strings.Fields(line)[1:]
	a := complete.Args{All: words, Completed: words}
	if !strings.HasSuffix(line, " ") {
		a.Completed, a.Last = words[:len(words)-1], words[len(words)-1]
	}
	if len(a.Completed) > 0 {
		a.LastCompleted = a.Completed[len(a.Completed)-1]
	}
	var out []string
	for _, o := range cmd.Predict(a) {
		if strings.HasPrefix(o, a.Last) {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

func TestCompletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kilolock.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := kilolock.NewEngine(st, kilolock.Options{})
	for _, name := range []string{"network", "net-edge", "app"} {
		if _, err := e.Lock(context.Background(), name, kilolock.LockInfo{ID: "x", Who: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard)}))
	t.Cleanup(srv.Close)
	t.Setenv("KL_SERVER", "")
	t.Setenv("KL_DATABASE_URL", "")

	tests := []struct {
		line string
		want []string
	}{
		{"kl sta", []string{"state", "states", "status"}},
		{"kl comp", []string{"completion"}},
		{"kl completion ", []string{"bash", "fish", "zsh"}},
		{"kl history --l", []string{"--limit", "--log-level"}},
		{"kl state ", []string{"archive", "config", "list", "merge", "mv", "pull", "restore", "rm", "show", "split"}},
		{"kl --database " + path + " status ", []string{"app", "net-edge", "network"}},
		{"kl --database=" + path + " history net", []string{"net-edge", "network"}},
		{"kl --server " + srv.URL + " diff n", []string{"net-edge", "network"}},
		{"kl --server " + srv.URL + " rollback resource --state a", []string{"app"}},
		{"kl --server " + srv.URL + " rollback resource a", []string{"app"}},
		{"kl --server http://127.0.0.1:1 status ", nil}, // nobody there: no names, no error
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			if got := completions(t, tt.line); !slices.Equal(got, tt.want) {
				t.Errorf("completions(%q) = %v, want %v", tt.line, got, tt.want)
			}
		})
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o default -C ", "zsh": "bashcompinit", "fish": "complete -f -c kl"} {
		var out strings.Builder
		if err := (&klcli.CompletionCmd{Shell: shell}).Run(&klcli.Globals{Out: &out}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("kl completion %s = %q, want %q in it", shell, out.String(), want)
		}
	}
}
