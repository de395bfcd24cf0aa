package klcli_test

import (
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
		parser, err := kong.New(&cli, kong.Vars{"default_server": "http://x"})
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
	parser, err := kong.New(&cli, kong.Vars{"default_server": "http://x"})
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
