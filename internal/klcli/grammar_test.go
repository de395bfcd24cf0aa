package klcli_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock/internal/klcli"
)

// TestStateConfigFlags checks that the settings of kl state config are
// unset unless given, and take =true, =false and --no-.
func TestStateConfigFlags(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		args               []string
		exclusive, lineage *bool
	}{
		{[]string{"state", "config", "s"}, nil, nil},
		{[]string{"state", "config", "s", "--exclusive-locks=false"}, &no, nil},
		{[]string{"state", "config", "s", "--exclusive-locks=true"}, &yes, nil},
		{[]string{"state", "config", "s", "--exclusive-locks"}, &yes, nil},
		{[]string{"state", "config", "s", "--no-exclusive-locks"}, &no, nil},
		{[]string{"state", "config", "s", "--allow-lineage-change", "--exclusive-locks=false"}, &no, &yes},
		{[]string{"state", "config", "s", "--allow-lineage-change=false"}, nil, &no},
	} {
		var cli klcli.App
		parser, err := kong.New(&cli, klcli.Vars())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c := cli.State.Config
		if !sameBool(c.ExclusiveLocks, tc.exclusive) || !sameBool(c.AllowLineageChange, tc.lineage) {
			t.Errorf("%v: exclusive %v, lineage %v", tc.args, show(c.ExclusiveLocks), show(c.AllowLineageChange))
		}
	}
}

func TestHistoryRejectedFlags(t *testing.T) {
	var cli klcli.App
	parser, err := kong.New(&cli, klcli.Vars())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"history", "s", "--rejected", "--limit", "5"}); err != nil {
		t.Fatal(err)
	}
	if !cli.History.Rejected || cli.History.Limit != 5 {
		t.Errorf("history = %+v", cli.History)
	}
	if _, err := parser.Parse([]string{"conflicts", "s", "--json"}); err != nil {
		t.Fatal(err)
	}
	if !cli.Conflicts.JSON || cli.Conflicts.Limit != 20 || cli.Conflicts.Name != "s" {
		t.Errorf("conflicts = %+v", cli.Conflicts)
	}
}

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(b *bool) any {
	if b == nil {
		return "unset"
	}
	return *b
}

// TestOpsGrammar: kl backup needs -o; kl retention set takes one scope;
// kl restore takes its file.
func TestOpsGrammar(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"backup", "-o", "b.json.gz"}, true},
		{[]string{"backup"}, false},
		{[]string{"restore", "--database", "x.db", "b.json.gz"}, true},
		{[]string{"restore"}, false},
		{[]string{"retention", "set", "--state", "a", "--keep-last", "3"}, true},
		{[]string{"retention", "set", "--server-wide", "--keep-days", "30"}, true},
		{[]string{"retention", "set", "--state", "a", "--env", "env_x", "--keep-last", "3"}, false},
		{[]string{"retention", "apply", "--dry-run", "--state", "a", "--batch", "5"}, true},
		{[]string{"retention", "pruned", "a", "--limit", "5"}, true},
	} {
		var cli klcli.App
		parser, err := kong.New(&cli, klcli.Vars())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(tc.args); (err == nil) != tc.ok {
			t.Errorf("%v: %v, want ok=%v", tc.args, err, tc.ok)
		}
	}
}

// TestOpsUsageErrors: what the grammar cannot say is a usage error before
// anything is opened.
func TestOpsUsageErrors(t *testing.T) {
	ctx := t.Context()
	for name, args := range map[string][]string{
		"restore through a server": {"restore", "b.json.gz"},
		"set without a limit":      {"retention", "set", "--server-wide"},
		"set without a scope":      {"retention", "set", "--keep-last", "3"},
		"keep-all and a limit":     {"retention", "set", "--state", "a", "--keep-all", "--keep-last", "3"},
		"unset without a scope":    {"retention", "unset"},
		"batch too large":          {"retention", "apply", "--batch", "10001"},
	} {
		var cli klcli.App
		parser, err := kong.New(&cli, klcli.Vars(), kong.BindTo(ctx, (*context.Context)(nil)))
		if err != nil {
			t.Fatal(err)
		}
		kctx, err := parser.Parse(append(args, "--server", "http://127.0.0.1:1"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ue *klcli.UsageError
		if err := kctx.Run(&cli.Globals); !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}

// TestPreferFlags: a server and a database both set, one from the
// environment: the command line's wins; both from the command line, or
// both from the environment, stay both (an error when run).
func TestPreferFlags(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		name                     string
		env                      map[string]string
		server, database         string
		wantServer, wantDatabase string
	}{
		{"database flag over KL_SERVER", map[string]string{"KL_SERVER": "http://s"}, "http://s", "k.db", "", "k.db"},
		{"server flag over KL_DATABASE_URL", map[string]string{"KL_DATABASE_URL": "k.db"}, "http://s", "k.db", "http://s", ""},
		{"both flags", nil, "http://s", "k.db", "http://s", "k.db"},
		{"both from the environment", map[string]string{"KL_SERVER": "http://s", "KL_DATABASE_URL": "k.db"}, "http://s", "k.db", "http://s", "k.db"},
		{"one only", map[string]string{"KL_SERVER": "http://s"}, "http://s", "", "http://s", ""},
	} {
		env = tt.env
		g := klcli.Globals{Server: tt.server, Database: tt.database}
		g.PreferFlags(getenv)
		if g.Server != tt.wantServer || g.Database != tt.wantDatabase {
			t.Errorf("%s: server %q, database %q", tt.name, g.Server, g.Database)
		}
	}
}

// TestArgs: kl query's SQL may start with a -- comment, and --json before
// the command counts as the command's own.
func TestArgs(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{[]string{"query", "-- c\nSELECT 1"}, []string{"query", "\n-- c\nSELECT 1"}},
		{[]string{"--server", "http://x", "query", "-- c\nSELECT 1", "--json"}, []string{"--server", "http://x", "query", "\n-- c\nSELECT 1", "--json"}},
		{[]string{"query", "--file", "-- odd name"}, []string{"query", "--file", "-- odd name"}},
		{[]string{"history", "-- not sql"}, []string{"history", "-- not sql"}},
		{[]string{"--json", "history", "prod"}, []string{"history", "prod", "--json"}},
		{[]string{"--server", "http://x", "--json", "states"}, []string{"--server", "http://x", "states", "--json"}},
		{[]string{"--token", "--json", "states"}, []string{"--token", "--json", "states"}},
	} {
		if got := klcli.Args(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Args(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
