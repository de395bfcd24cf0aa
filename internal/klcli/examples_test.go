package klcli_test

import (
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock/internal/klcli"
)

// TestEveryCommandHasAnExample: each of kl's commands shows an example in
// its --help, and the example parses as kl reads it (the right command,
// arguments and flags), so none drifts from the grammar.
func TestEveryCommandHasAnExample(t *testing.T) {
	var app klcli.App
	p, err := kong.New(&app, klcli.Vars(), klcli.Examples())
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, c := range n.Children {
			walk(c)
		}
		if len(n.Children) > 0 || n.Type != kong.CommandNode {
			return
		}
		if !strings.Contains(n.Help+n.Detail, "Example") {
			t.Errorf("kl %s --help shows no example", n.Path())
			return
		}
		ex := n.Tag.Get("example")
		if ex == "" {
			return // written in its help text
		}
		i := strings.Index(ex, "kl ")
		if i < 0 {
			t.Errorf("kl %s: the example runs no kl: %s", n.Path(), ex)
			return
		}
		line := ex[i+len("kl "):]
		for _, cut := range []string{" > ", " < ", ")"} {
			line, _, _ = strings.Cut(line, cut)
		}
		args := shellWords(line)
		var fresh klcli.App
		fp, err := kong.New(&fresh, klcli.Vars())
		if err != nil {
			t.Fatal(err)
		}
		kctx, err := fp.Parse(klcli.Args(args))
		if err != nil {
			t.Errorf("kl %s: the example %q does not parse: %v", n.Path(), ex, err)
			return
		}
		if got := kctx.Command(); !strings.HasPrefix(strings.Join(strings.Fields(stripArgs(got)), " "), n.Path()) && n.Path() != "apply run" {
			t.Errorf("kl %s: the example %q runs kl %s", n.Path(), ex, got)
		}
	}
	walk(p.Model.Node)
}

// stripArgs drops kong's <arg> words from a command path.
func stripArgs(cmd string) string {
	var out []string
	for _, w := range strings.Fields(cmd) {
		if !strings.HasPrefix(w, "<") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// shellWords splits a command line as a shell would, for the quoting the
// examples use: '…' and "…" (no escapes, no expansions but $VAR kept as
// is).
func shellWords(s string) []string {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
