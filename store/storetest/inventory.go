package storetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/tenancy"
)

// inventoryStore is the store as an inventory.Store; the test fails when
// it is not one.
func inventoryStore(t testing.TB, s kilolock.Store) inventory.Store {
	t.Helper()
	is, ok := s.(inventory.Store)
	if !ok {
		t.Fatalf("%T is not an inventory.Store", s)
	}
	return is
}

// seedInventory commits the fleet the inventory tests search: three
// states (two tenants' and one of the local lane), each with a web
// server, a subnet in module.net, an AMI data source and a database whose
// password is sensitive; a bucket recorded by ws_a's state and plain's,
// a clock both ws_b's and plain's record (the same id), and objects that
// look alike but must not count (a deposed one, a data source).
// It returns the password, which nothing may find.
func seedInventory(t testing.TB, s kilolock.Store) string {
	t.Helper()
	password := "pw-" + strings.Repeat("9z", 8)
	data := graph.Resource{Mode: "data", Type: "aws_ami", Name: "ubuntu", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	subnet := resource("aws_subnet", "a")
	subnet.Module = "module.net"
	for _, st := range []struct{ name, tag string }{{"ws_a.env_a.net", "alpha"}, {"ws_b.env_b.net", "beta"}, {"plain", "gamma"}} {
		c := next(t, s, st.name)
		c.Upserts = append(c.Upserts,
			instance(t, resource("aws_instance", "web"), intKey(0), `{"id":"i-`+st.tag+`","ami":"ami-123","tags":{"Name":"web-`+st.tag+`"}}`),
			instance(t, subnet, graph.IndexKey{}, `{"id":"subnet-`+st.tag+`","cidr_block":"10.0.0.0/24"}`),
			instance(t, data, graph.IndexKey{}, `{"id":"ami-123","name":"ubuntu-`+st.tag+`"}`),
			sensitiveInstance(t, "db", password, "db-"+st.tag+".internal"),
		)
		switch st.name {
		case "ws_a.env_a.net":
			c.Upserts = append(c.Upserts, instance(t, resource("aws_s3_bucket", "logs"), graph.IndexKey{}, `{"id":"logs","arn":"arn:aws:s3:::logs"}`))
		case "ws_b.env_b.net":
			c.Upserts = append(c.Upserts, instance(t, resource("time_static", "born"), graph.IndexKey{}, `{"id":"2026-12-04T10:00:00Z","rfc3339":"2026-12-04T10:00:00Z"}`))
		case "plain":
			web := resource("aws_instance", "web")
			c.Upserts = append(c.Upserts,
				instance(t, resource("aws_s3_bucket", "archive"), graph.IndexKey{}, `{"id":"archive-copy","arn":"arn:aws:s3:::logs"}`),
				instance(t, resource("time_static", "copy"), graph.IndexKey{}, `{"id":"2026-12-04T10:00:00Z","rfc3339":"2026-12-04T10:00:00Z"}`),
				// deposed, and a data source: neither is a duplicate of i-alpha
				newInstance(t, web, object(intKey(0), "", "0badcafe", `{"id":"i-alpha"}`, nil)),
				instance(t, graph.Resource{Mode: "data", Type: "aws_instance", Name: "peer", Provider: web.Provider}, graph.IndexKey{}, `{"id":"i-beta"}`),
			)
		}
		commit(t, s, st.name, c)
	}
	return password
}

// hitKeys are "STATE ADDRESS" of hits, in order.
func hitKeys(hits []inventory.Hit) []string {
	out := []string{}
	for _, h := range hits {
		k := h.State + " " + h.Address
		if h.Deposed != "" {
			k += " deposed " + h.Deposed
		}
		out = append(out, k)
	}
	return out
}

func search(t testing.TB, is inventory.Store, scope *tenancy.QueryScope, f inventory.Filters) *inventory.Page {
	t.Helper()
	q, err := inventory.ParseQuery(f)
	if err != nil {
		t.Fatalf("ParseQuery(%+v): %v", f, err)
	}
	q.Scope = scope
	p, err := inventory.Search(context.Background(), is, q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", f, err)
	}
	return p
}

func testInventory(t *testing.T, open Opener) {
	s := open(t)
	is := inventoryStore(t, s)
	password := seedInventory(t, s)
	all := []string{"ws_a.env_a.net", "ws_b.env_b.net", "plain"}
	each := func(addr string, states ...string) []string {
		out := []string{}
		for _, st := range states {
			out = append(out, st+" "+addr)
		}
		return out
	}

	t.Run("Filters", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			f    inventory.Filters
			want []string
		}{
			{"type", inventory.Filters{Type: "aws_instance"}, append(each("aws_instance.web[0]", all...), "plain aws_instance.web[0] deposed 0badcafe")},
			{"type with data", inventory.Filters{Type: "aws_instance", Data: true, State: "plain"}, []string{"plain aws_instance.web[0]", "plain aws_instance.web[0] deposed 0badcafe", "plain data.aws_instance.peer"}},
			{"data source by address", inventory.Filters{Address: "data.aws_ami.ubuntu", State: "ws_*"}, each("data.aws_ami.ubuntu", "ws_a.env_a.net", "ws_b.env_b.net")},
			{"resource", inventory.Filters{Address: "aws_instance.web", State: "ws_a.*"}, each("aws_instance.web[0]", "ws_a.env_a.net")},
			{"instance", inventory.Filters{Address: "aws_instance.web[0]", State: "net"}, each("aws_instance.web[0]", "ws_a.env_a.net", "ws_b.env_b.net")},
			{"no such instance", inventory.Filters{Address: "aws_instance.web[1]"}, []string{}},
			{"module", inventory.Filters{Address: "module.net.*"}, each("module.net.aws_subnet.a", all...)},
			{"module without .*", inventory.Filters{Address: "module.net"}, each("module.net.aws_subnet.a", all...)},
			{"attr", inventory.Filters{Attr: []string{"tags.Name=web-beta"}}, each("aws_instance.web[0]", "ws_b.env_b.net")},
			{"two attrs", inventory.Filters{Attr: []string{"ami=ami-123", "id=i-gamma"}}, each("aws_instance.web[0]", "plain")},
			{"text", inventory.Filters{Text: "SUBNET-ALPHA"}, each("module.net.aws_subnet.a", "ws_a.env_a.net")},
			{"text of an unmasked attribute of a secret's object", inventory.Filters{Text: "db-beta.internal"}, each("aws_db_instance.db", "ws_b.env_b.net")},
			{"text with a quote", inventory.Filters{Text: `"`}, []string{}},
			{"text with a quote, indexed", inventory.Filters{Text: `"i-alpha`}, []string{}},
			// LIKE's wildcards mean themselves: web_ is no web-.
			{"text with a wildcard", inventory.Filters{Text: "web_"}, []string{}},
			{"text with a wildcard, of a state", inventory.Filters{Text: "web%"}, []string{}},
			// Shorter than the index finds: every object is checked.
			{"short text", inventory.Filters{Text: "PH"}, []string{"ws_a.env_a.net aws_instance.web[0]", "ws_a.env_a.net module.net.aws_subnet.a",
				"ws_a.env_a.net aws_db_instance.db", "plain aws_instance.web[0] deposed 0badcafe"}},
			{"text of a key", inventory.Filters{Text: "cidr_bl"}, each("module.net.aws_subnet.a", all...)},
			{"text of a data source", inventory.Filters{Text: "ubuntu-gamma", Data: true}, each("data.aws_ami.ubuntu", "plain")},
			{"text of a data source, without data", inventory.Filters{Text: "ubuntu-gamma"}, []string{}},
			{"state", inventory.Filters{State: "plain", Type: "time_static"}, each("time_static.copy", "plain")},
			{"everything managed", inventory.Filters{State: "ws_b.env_b.net"}, []string{"ws_b.env_b.net aws_db_instance.db", "ws_b.env_b.net aws_instance.web[0]", "ws_b.env_b.net module.net.aws_subnet.a", "ws_b.env_b.net time_static.born"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := hitKeys(search(t, is, nil, tc.f).Hits)
				slices.Sort(got)
				want := slices.Clone(tc.want)
				slices.Sort(want)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("hits (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("Hit", func(t *testing.T) {
		p := search(t, is, nil, inventory.Filters{Attr: []string{"tags.Name=web-alpha"}, Text: "ami-1"})
		cur, err := s.State(context.Background(), "ws_a.env_a.net")
		if err != nil {
			t.Fatal(err)
		}
		want := []inventory.Hit{{State: "ws_a.env_a.net", Version: cur.Current, Address: "aws_instance.web[0]", Mode: "managed", Type: "aws_instance", Paths: []string{"tags.Name", "ami"}}}
		if diff := cmp.Diff(want, p.Hits); diff != "" {
			t.Errorf("hit (-want +got):\n%s", diff)
		}
	})

	t.Run("SensitiveNeverMatches", func(t *testing.T) {
		for _, f := range []inventory.Filters{
			{Text: password}, {Text: password[3:9]}, {Attr: []string{"password=" + password}},
			{Text: "sensitive"}, {Attr: []string{"password=" + graph.SensitiveMask}},
		} {
			if p := search(t, is, nil, f); len(p.Hits) != 0 {
				t.Errorf("%+v found %v", f, hitKeys(p.Hits))
			}
		}
		// The attribute's key is no secret: its path is found, never its value.
		p := search(t, is, nil, inventory.Filters{Text: "passw", State: "plain"})
		if got := hitKeys(p.Hits); !slices.Equal(got, []string{"plain aws_db_instance.db"}) || !slices.Equal(p.Hits[0].Paths, []string{"password"}) {
			t.Errorf("a search for the key: %v %+v", got, p.Hits)
		}
	})

	t.Run("Pages", func(t *testing.T) {
		whole := hitKeys(search(t, is, nil, inventory.Filters{Data: true}).Hits)
		if len(whole) != 18 {
			t.Fatalf("every object: %d hits %v, want 18", len(whole), whole)
		}
		var paged []string
		f := inventory.Filters{Data: true, Limit: 4}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pages do not end")
			}
			p := search(t, is, nil, f)
			if len(p.Hits) > 4 {
				t.Fatalf("a page of %d hits, limit 4", len(p.Hits))
			}
			paged = append(paged, hitKeys(p.Hits)...)
			if p.Next == "" {
				break
			}
			f.Cursor = p.Next
		}
		if diff := cmp.Diff(whole, paged); diff != "" {
			t.Errorf("pages joined (-whole +paged):\n%s", diff)
		}
	})

	t.Run("BadFilters", func(t *testing.T) {
		for _, tc := range []struct {
			f    inventory.Filters
			code string
		}{
			{inventory.Filters{Address: "aws_instance"}, "invalid_address"},
			{inventory.Filters{Address: "output.x"}, "invalid_address"},
			{inventory.Filters{Attr: []string{"novalue"}}, "invalid_attr"},
			{inventory.Filters{Attr: []string{"a..b=1"}}, "invalid_attr"},
			{inventory.Filters{Limit: -1}, "invalid_limit"},
			{inventory.Filters{Limit: inventory.MaxLimit + 1}, "invalid_limit"},
			{inventory.Filters{Cursor: "not-a-cursor"}, "invalid_cursor"},
		} {
			_, err := inventory.ParseQuery(tc.f)
			var ie *kilolock.InvalidError
			if !errors.As(err, &ie) || ie.Code != tc.code || ie.Hint == "" {
				t.Errorf("ParseQuery(%+v) = %v, want %s with a hint", tc.f, err, tc.code)
			}
		}
	})

	t.Run("Duplicates", func(t *testing.T) {
		got, err := inventory.Duplicates(context.Background(), is, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		version := func(name string) int64 {
			st, err := s.State(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			return st.Current
		}
		want := []inventory.Duplicate{
			{Type: "aws_s3_bucket", Key: "arn", Value: "arn:aws:s3:::logs", Objects: []inventory.Object{
				{State: "plain", Version: version("plain"), Address: "aws_s3_bucket.archive"},
				{State: "ws_a.env_a.net", Version: version("ws_a.env_a.net"), Address: "aws_s3_bucket.logs"},
			}},
			{Type: "time_static", Key: "id", Value: "2026-12-04T10:00:00Z", Objects: []inventory.Object{
				{State: "plain", Version: version("plain"), Address: "time_static.copy"},
				{State: "ws_b.env_b.net", Version: version("ws_b.env_b.net"), Address: "time_static.born"},
			}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("duplicates (-want +got):\n%s", diff)
		}
		if got, err := inventory.Duplicates(context.Background(), is, nil, "time_static"); err != nil || len(got) != 1 || got[0].Type != "time_static" {
			t.Errorf("duplicates of time_static: %+v, %v", got, err)
		}
		// The view for SQL lists the same objects, state by state.
		res, err := s.Query(context.Background(), kilolock.QueryLimits{}, `SELECT type, key, value, state, address, states FROM duplicate_objects ORDER BY type, state, address`)
		if err != nil {
			t.Fatalf("duplicate_objects: %v", err)
		}
		var rows []string
		for _, r := range res.Rows {
			rows = append(rows, strings.TrimSpace(fmt.Sprintln(r...)))
		}
		wantRows := []string{
			"aws_s3_bucket arn arn:aws:s3:::logs plain aws_s3_bucket.archive 2",
			"aws_s3_bucket arn arn:aws:s3:::logs ws_a.env_a.net aws_s3_bucket.logs 2",
			"time_static id 2026-12-04T10:00:00Z plain time_static.copy 2",
			"time_static id 2026-12-04T10:00:00Z ws_b.env_b.net time_static.born 2",
		}
		if diff := cmp.Diff(wantRows, rows); diff != "" {
			t.Errorf("duplicate_objects (-want +got):\n%s", diff)
		}
	})

	t.Run("TenantLeaks", func(t *testing.T) { testInventoryLeaks(t, s, is, password) })

	// A scan longer than a store's batch of rows goes on where the batch
	// stopped: a filter only the last object passes finds it, and pages of
	// the most hits give every object once, in order.
	t.Run("LongScan", func(t *testing.T) {
		const n = 2500
		c := next(t, s, "big")
		for i := range n {
			c.Upserts = append(c.Upserts, instance(t, resource("aws_eip", "ip"), intKey(int64(i)), fmt.Sprintf(`{"id":"eip-%05d"}`, i)))
		}
		commit(t, s, "big", c)
		if got := hitKeys(search(t, is, nil, inventory.Filters{Type: "aws_eip", Attr: []string{"id=eip-02499"}}).Hits); !slices.Equal(got, []string{"big aws_eip.ip[2499]"}) {
			t.Errorf("the last object: %v", got)
		}
		if got := hitKeys(search(t, is, nil, inventory.Filters{Text: "EIP-0249", State: "big"}).Hits); len(got) != 10 { // eip-02490 to eip-02499
			t.Errorf("text in the last objects: %d hits %v", len(got), got)
		}
		seen := map[string]bool{}
		f := inventory.Filters{Type: "aws_eip", State: "big", Limit: inventory.MaxLimit}
		for pages := 1; ; pages++ {
			p := search(t, is, nil, f)
			for _, k := range hitKeys(p.Hits) {
				if seen[k] {
					t.Fatalf("page %d repeats %s", pages, k)
				}
				seen[k] = true
			}
			if p.Next == "" {
				break
			}
			f.Cursor = p.Next
		}
		if len(seen) != n {
			t.Errorf("pages gave %d objects, want %d", len(seen), n)
		}
	})

	// The text index holds the current objects only: a text an object
	// held before its state's latest write, or that a deleted state held,
	// is not found; the text it holds now is.
	t.Run("TextOfCurrentObjects", func(t *testing.T) {
		found := func(text string) []string {
			t.Helper()
			return hitKeys(search(t, is, nil, inventory.Filters{Text: text}).Hits)
		}
		note := resource("aws_ssm_parameter", "note")
		c := next(t, s, "texts")
		c.Upserts = append(c.Upserts, instance(t, note, graph.IndexKey{}, `{"id":"note-1","value":"first-words"}`),
			instance(t, resource("aws_ssm_parameter", "kept"), graph.IndexKey{}, `{"id":"note-2","value":"kept-words"}`))
		commit(t, s, "texts", c)
		c = next(t, s, "texts")
		c.Upserts = append(c.Upserts, instance(t, note, graph.IndexKey{}, `{"id":"note-1","value":"second-words"}`))
		commit(t, s, "texts", c)
		for text, want := range map[string][]string{
			"first-words":  {},
			"second-words": {"texts aws_ssm_parameter.note"},
			"-words":       {"texts aws_ssm_parameter.kept", "texts aws_ssm_parameter.note"},
		} {
			if got := found(text); !slices.Equal(got, want) {
				t.Errorf("text %q: %v, want %v", text, got, want)
			}
		}
		if _, err := s.Delete(context.Background(), "texts", kilolock.DeleteOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		if got := found("-words"); len(got) != 0 {
			t.Errorf("text of a deleted state: %v", got)
		}
	})
}

// testInventoryLeaks is the inventory's leak matrix: every filter, with
// each scope, names only the scope's states, and finds in them exactly
// what the operator finds there.
func testInventoryLeaks(t *testing.T, s kilolock.Store, is inventory.Store, password string) {
	ctx := context.Background()
	scopes := []struct {
		name  string
		scope *tenancy.QueryScope
		may   func(state string) bool
	}{
		{"ws_a", &tenancy.QueryScope{Prefixes: []string{"ws_a.env_a."}}, func(s string) bool { return strings.HasPrefix(s, "ws_a.env_a.") }},
		{"ws_b", &tenancy.QueryScope{Prefixes: []string{"ws_b.env_b."}}, func(s string) bool { return strings.HasPrefix(s, "ws_b.env_b.") }},
		{"both", &tenancy.QueryScope{Prefixes: []string{"ws_a.env_a.", "ws_b.env_b."}}, func(s string) bool { return strings.HasPrefix(s, "ws_") }},
		{"none", &tenancy.QueryScope{Prefixes: []string{}}, func(string) bool { return false }},
		// A prefix's '_' is no wildcard: ws_a's scope does not reach wsXa.
		{"like", &tenancy.QueryScope{Prefixes: []string{"ws_a.env_a."}}, func(s string) bool { return strings.HasPrefix(s, "ws_a.env_a.") }},
	}
	c := next(t, s, "wsXa.env_a.net")
	c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "web"), intKey(0), `{"id":"i-lookalike","ami":"ami-123"}`))
	commit(t, s, "wsXa.env_a.net", c)

	filters := []inventory.Filters{
		{}, {Data: true}, {Type: "aws_instance"}, {Type: "aws_instance", Data: true}, {Address: "aws_instance.web[0]"},
		{Address: "module.net.*"}, {Attr: []string{"ami=ami-123"}}, {Text: "beta"}, {Text: "gamma"}, {Text: "alpha"},
		{Text: password}, {State: "*"}, {State: "plain"}, {State: "net"}, {State: "wsXa*"}, {Limit: 1},
	}
	for _, sc := range scopes {
		for _, f := range filters {
			op := search(t, is, nil, f)
			got := search(t, is, sc.scope, f)
			var want []string
			if f.Limit == 0 {
				for _, k := range hitKeys(op.Hits) {
					if sc.may(strings.Fields(k)[0]) {
						want = append(want, k)
					}
				}
			}
			for _, h := range got.Hits {
				if !sc.may(h.State) {
					t.Errorf("scope %s, %+v: a hit of %s", sc.name, f, h.State)
				}
			}
			if f.Limit == 0 {
				if diff := cmp.Diff(want, hitKeys(got.Hits), cmpOpts...); diff != "" {
					t.Errorf("scope %s, %+v (-operator's within scope +scope's):\n%s", sc.name, f, diff)
				}
			}
		}
		dups, err := inventory.Duplicates(ctx, is, sc.scope, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dups {
			for _, o := range d.Objects {
				if !sc.may(o.State) {
					t.Errorf("scope %s: a duplicate names %s", sc.name, o.State)
				}
			}
		}
		// Every duplicate of the fleet has one copy in plain, which no
		// scope reaches: within a scope, nothing is recorded twice.
		if len(dups) != 0 {
			t.Errorf("scope %s: duplicates %s, want none", sc.name, fmt.Sprint(dups))
		}
	}
}

// UndoIdentityKeys takes a database back from the schema that added
// identity keys (SQLite's 20, PostgreSQL's 22) to the one before, in the
// SQL of both.
var UndoIdentityKeys = []string{
	`DROP INDEX instance_intervals_identity`,
	`DROP INDEX instance_intervals_identity_pending`,
	`ALTER TABLE instance_intervals DROP COLUMN ident_key`,
	`ALTER TABLE instance_intervals DROP COLUMN ident_hash`,
}

// UndoSearchTextPostgres takes a PostgreSQL database back from the
// schema that added the search text (its migration 24) to the one before
// (pg_trgm, which the migration creates if it must, stays).
var UndoSearchTextPostgres = []string{
	`DROP INDEX instance_intervals_text`,
	`DROP INDEX instance_intervals_text_pending`,
	`ALTER TABLE instance_intervals DROP COLUMN search_text`,
}

// UndoSearchTextSQLite takes a SQLite database back from the schema that
// added the search text (its migration 22) to the one before.
var UndoSearchTextSQLite = []string{
	`DROP TRIGGER instance_text_open`,
	`DROP TRIGGER instance_text_update`,
	`DROP TRIGGER instance_text_delete`,
	`DROP TABLE instance_text`,
	`DROP TABLE instance_text_rows`,
	`DROP INDEX instance_intervals_text_pending`,
	`ALTER TABLE instance_intervals DROP COLUMN search_text`,
}

// SeedSearchText commits a state of two objects, for a test of the
// migration that adds the search text: undo it, open the store again,
// and CheckSearchText finds them by text from the texts the store filled
// in as it opened.
func SeedSearchText(t testing.TB, s kilolock.Store) {
	t.Helper()
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: lineage, Source: kilolock.SourcePush, Format: "compact"}}
	c.Upserts = append(c.Upserts,
		instance(t, resource("aws_s3_bucket", "a"), graph.IndexKey{}, `{"id":"bucket-before-upgrade","tags":{"Team":"Platform"}}`),
		instance(t, resource("aws_s3_bucket", "b"), graph.IndexKey{}, `{"id":"other"}`))
	if _, _, err := s.Commit(context.Background(), "texts-upgraded", c); err != nil {
		t.Fatal(err)
	}
}

// CheckSearchText checks a search by text of SeedSearchText's state.
func CheckSearchText(t testing.TB, s kilolock.Store) {
	t.Helper()
	is := inventoryStore(t, s)
	for text, want := range map[string][]string{
		"before-upgrade": {"texts-upgraded aws_s3_bucket.a"},
		"platform":       {"texts-upgraded aws_s3_bucket.a"},
		"nowhere":        {},
	} {
		if got := hitKeys(search(t, is, nil, inventory.Filters{Text: text}).Hits); !slices.Equal(got, want) {
			t.Errorf("text %q after the upgrade: %v, want %v", text, got, want)
		}
	}
}

// CheckTextIndexUpgrade is CheckSearchText, then a write of
// SeedSearchText's state (its version 1) that replaces one object and
// removes the other: the new text is found,
// neither old one is.
func CheckTextIndexUpgrade(t testing.TB, s kilolock.Store) {
	t.Helper()
	CheckSearchText(t, s)
	ctx := context.Background()
	a := instance(t, resource("aws_s3_bucket", "a"), graph.IndexKey{}, `{"id":"bucket-after-upgrade"}`)
	b := instance(t, resource("aws_s3_bucket", "b"), graph.IndexKey{}, `{"id":"other"}`)
	c := &kilolock.Commit{Parent: 1, Version: kilolock.Version{Serial: 2, Lineage: lineage, Source: kilolock.SourcePush, Format: "compact"},
		Upserts: []graph.Instance{a}, Removed: []string{b.ID()}}
	if _, _, err := s.Commit(ctx, "texts-upgraded", c); err != nil {
		t.Fatal(err)
	}
	is := inventoryStore(t, s)
	for text, want := range map[string][]string{
		"after-upgrade":  {"texts-upgraded aws_s3_bucket.a"},
		"before-upgrade": {},
		"platform":       {},
		"other":          {},
	} {
		if got := hitKeys(search(t, is, nil, inventory.Filters{Text: text}).Hits); !slices.Equal(got, want) {
			t.Errorf("text %q after a write on the upgraded schema: %v, want %v", text, got, want)
		}
	}
}

// SeedIdentityKeys commits two states that record the same bucket and one
// that records another, for a test of the migration that adds identity
// keys: undo it, open the store again, and CheckIdentityKeys finds the
// duplicate from the keys the store filled in as it opened.
func SeedIdentityKeys(t testing.TB, s kilolock.Store) {
	t.Helper()
	for name, id := range map[string]string{"keys-a": "bucket-1", "keys-b": "bucket-1", "keys-c": "bucket-2"} {
		c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: lineage, Source: kilolock.SourcePush, Format: "compact"}}
		c.Upserts = append(c.Upserts, instance(t, resource("aws_s3_bucket", "b"), graph.IndexKey{}, fmt.Sprintf(`{"id":%q}`, id)))
		if _, _, err := s.Commit(context.Background(), name, c); err != nil {
			t.Fatal(err)
		}
	}
}

// CheckIdentityKeys checks the duplicates of SeedIdentityKeys' states.
func CheckIdentityKeys(t testing.TB, s kilolock.Store) {
	t.Helper()
	got, err := inventory.Duplicates(context.Background(), inventoryStore(t, s), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Value != "bucket-1" || len(got[0].Objects) != 2 || got[0].Objects[0].State != "keys-a" || got[0].Objects[1].State != "keys-b" {
		t.Errorf("duplicates after the upgrade = %+v, want bucket-1 in keys-a and keys-b", got)
	}
}

// CheckDuplicateView checks the view duplicate_objects of SeedIdentityKeys'
// states: the bucket both record, in each.
func CheckDuplicateView(t testing.TB, s kilolock.Store) {
	t.Helper()
	res, err := s.Query(context.Background(), kilolock.QueryLimits{}, `SELECT type, key, value, state, address, states FROM duplicate_objects ORDER BY state`)
	if err != nil {
		t.Fatalf("duplicate_objects: %v", err)
	}
	var rows []string
	for _, r := range res.Rows {
		rows = append(rows, strings.TrimSpace(fmt.Sprintln(r...)))
	}
	want := []string{"aws_s3_bucket id bucket-1 keys-a aws_s3_bucket.b 2", "aws_s3_bucket id bucket-1 keys-b aws_s3_bucket.b 2"}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("duplicate_objects after the upgrade (-want +got):\n%s", diff)
	}
}

// Migration is the SQL of the migration file name of a store's migrations
// (its embedded migrations/ directory), for an undo list that restores
// what a later migration replaced.
func Migration(migrations fs.ReadFileFS, name string) string {
	b, err := migrations.ReadFile("migrations/" + name)
	if err != nil {
		panic(err)
	}
	return string(b)
}
