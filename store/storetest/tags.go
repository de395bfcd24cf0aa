package storetest

import (
	"context"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/tenancy"
)

// testTags: a tag names one version, moves, goes, is audited with every
// change, and goes with its state.
func testTags(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	ts, ok := s.(history.TagStore)
	if !ok {
		t.Skip("the store keeps no tags")
	}
	for range 2 {
		c := next(t, s, "s")
		c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "web"), intKey(int64(c.Parent)), `{"id":"i"}`))
		commit(t, s, "s", c)
	}
	audit := func(action string) *kilolock.AuditEntry {
		return &kilolock.AuditEntry{Actor: "alice", Action: action, Target: "s@pre-migration", From: "host"}
	}
	tag := &history.Tag{Name: "pre-migration", Version: 1, Description: "before the move", Actor: "alice"}
	must(t, ts.PutTag(ctx, "s", tag, audit("tag.set")))
	if n, err := ts.TagVersion(ctx, "s", "pre-migration"); err != nil || n != 1 {
		t.Fatalf("TagVersion = %d, %v; want 1", n, err)
	}
	// Moving it keeps one tag, naming the new version.
	must(t, ts.PutTag(ctx, "s", &history.Tag{Name: "pre-migration", Version: 2, Actor: "bob"}, audit("tag.set")))
	must(t, ts.PutTag(ctx, "s", &history.Tag{Name: "a-first", Version: 1, Actor: "bob"}, audit("tag.set")))
	tags, err := ts.Tags(ctx, "s")
	if err != nil || len(tags) != 2 || tags[0].Name != "a-first" || tags[1].Name != "pre-migration" || tags[1].Version != 2 || tags[1].Actor != "bob" || tags[1].Created.IsZero() {
		t.Fatalf("Tags = %+v, %v", tags, err)
	}
	errorIs(t, ts.PutTag(ctx, "s", &history.Tag{Name: "x", Version: 3}, audit("tag.set")), kilolock.ErrNotFound)
	errorIs(t, ts.PutTag(ctx, "missing", &history.Tag{Name: "x", Version: 1}, audit("tag.set")), kilolock.ErrNotFound)
	_, err = ts.TagVersion(ctx, "s", "nope")
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = ts.Tags(ctx, "missing")
	errorIs(t, err, kilolock.ErrNotFound)

	must(t, ts.DeleteTag(ctx, "s", "a-first", audit("tag.unset")))
	errorIs(t, ts.DeleteTag(ctx, "s", "a-first", audit("tag.unset")), kilolock.ErrNotFound)
	if tags, _ := ts.Tags(ctx, "s"); len(tags) != 1 {
		t.Errorf("after unset: %+v", tags)
	}
	// Every change, and no refusal, is in the audit log.
	if tn, ok := s.(tenancy.TenantStore); ok {
		entries, err := tn.Audit(ctx, kilolock.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var sets, unsets int
		for _, e := range entries {
			switch e.Action {
			case "tag.set":
				sets++
			case "tag.unset":
				unsets++
			}
		}
		if sets != 3 || unsets != 1 {
			t.Errorf("audited %d tag.set and %d tag.unset, want 3 and 1", sets, unsets)
		}
	}
	if _, err := s.Delete(ctx, "s", kilolock.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "s", next(t, s, "s"))
	if tags, err := ts.Tags(ctx, "s"); err != nil || len(tags) != 0 {
		t.Errorf("a state made again has the old one's tags: %+v, %v", tags, err)
	}
}
