package history_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/tenancy"
)

func TestValidTagName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"pre-migration", true},
		{"release-2026.11", true},
		{"v1", true},
		{"_x", true},
		{"latest", false},
		{"LATEST", false},
		{"@3", false},
		{"@latest", false},
		{"serial:5", false},
		{"Serial:5", false},
		{"42", false},
		{"", false},
		{"-rf", false},
		{".hidden", false},
		{"a b", false},
		{"a/b", false},
		{strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := kilolock.ValidTagName(tc.name)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidTagName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
			}
			var ie *kilolock.InvalidError
			if err != nil && (!errors.As(err, &ie) || ie.Code != "invalid_tag" || ie.Hint == "") {
				t.Fatalf("ValidTagName(%q) = %#v, want an invalid_tag with a hint", tc.name, err)
			}
		})
	}
}

// TestTagsAreVersionReferences: a tag names its version in every command
// that takes a version, survives later writes, and each change is audited.
func TestTagsAreVersionReferences(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	enginetest.ThreeVersions(t, e, "r")
	by := history.TagOptions{By: kilolock.Caller{Actor: "db:alice", From: "host"}, Description: "before the migration"}
	tag, err := history.SetTag(ctx, e, "r", "pre-migration", enginetest.MustRef(t, "@1"), by)
	if err != nil || tag.Version != 1 || tag.Actor != "db:alice" {
		t.Fatalf("SetTag = %+v, %v", tag, err)
	}
	if _, err := history.SetTag(ctx, e, "r", "head", kilolock.Latest, by); err != nil {
		t.Fatal(err)
	}
	ref := enginetest.MustRef(t, "pre-migration")
	if ref.Kind != kilolock.RefTag || ref.String() != "pre-migration" {
		t.Fatalf("ParseVersionRef(pre-migration) = %+v", ref)
	}
	if v, err := e.ResolveVersion(ctx, "r", ref); err != nil || v.Number != 1 {
		t.Fatalf("ResolveVersion(tag) = %+v, %v", v, err)
	}
	d, err := history.Diff(ctx, e, "r", ref, enginetest.MustRef(t, "head"))
	if err != nil || d.From.Number != 1 || d.To.Number != 3 {
		t.Fatalf("Diff(pre-migration, head) = %+v, %v", d, err)
	}
	res, err := history.Rollback(ctx, e, "r", ref, history.RollbackOptions{Actor: "alice"})
	if err != nil || res.Version == nil || res.Version.Number != 4 {
		t.Fatalf("Rollback --to pre-migration = %+v, %v", res, err)
	}
	// head still names @3, though @4 is the current version now.
	if v, err := e.ResolveVersion(ctx, "r", enginetest.MustRef(t, "head")); err != nil || v.Number != 3 {
		t.Fatalf("head after a later write = %+v, %v", v, err)
	}
	if _, err := history.Export(ctx, e, "r", enginetest.MustRef(t, "head")); err != nil {
		t.Fatal(err)
	}
	// An unknown tag is a 404 naming how to list them.
	_, err = e.ResolveVersion(ctx, "r", enginetest.MustRef(t, "nope"))
	if !errors.Is(err, kilolock.ErrNotFound) || !strings.Contains(err.Error(), "kl tag list r") {
		t.Fatalf("an unknown tag = %v", err)
	}
	for _, bad := range []string{"latest", "@2", "serial:3", "7"} {
		if _, err := history.SetTag(ctx, e, "r", bad, kilolock.Latest, by); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("SetTag(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := history.SetTag(ctx, e, "r", "x", enginetest.MustRef(t, "@9"), by); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("a tag on a missing version = %v", err)
	}
	if err := history.UnsetTag(ctx, e, "r", "head", by); err != nil {
		t.Fatal(err)
	}
	if err := history.UnsetTag(ctx, e, "r", "head", by); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("unsetting a missing tag = %v", err)
	}
	byVersion, err := history.TagsByVersion(ctx, e, "r")
	if err != nil || len(byVersion) != 1 || byVersion[1][0] != "pre-migration" {
		t.Fatalf("TagsByVersion = %v, %v", byVersion, err)
	}
	entries, err := st.(tenancy.TenantStore).Audit(ctx, kilolock.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range entries {
		got = append(got, a.Action+" "+a.Target+" by "+a.Actor)
	}
	want := "tag.unset r@head by db:alice|tag.set r@head by db:alice|tag.set r@pre-migration by db:alice"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit log %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestTagDescriptionText: a tag's description, shown by kl tag list and
// the web view, refuses what would reorder or hide the text around it (a
// right-to-left override, an isolate, a C1 control) with a 400 that names
// the character; a description in any script is kept.
func TestTagDescriptionText(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.ThreeVersions(t, e, "r")
	for _, bad := range []string{"safe\u202e", "\u2066safe\u2069", "safe\u009b2J", "a\u200bb"} {
		_, err := history.SetTag(ctx, e, "r", "t", kilolock.Latest, history.TagOptions{Description: bad})
		var ie *kilolock.InvalidError
		if !errors.As(err, &ie) || ie.Code != "invalid_description" || !strings.Contains(ie.Message, "U+") || ie.Hint == "" {
			t.Errorf("description %q: err = %v, want invalid_description naming the character", bad, err)
		}
	}
	if tags, err := history.Tags(ctx, e, "r"); err != nil || len(tags) != 0 {
		t.Errorf("tags after the refusals: %+v, %v", tags, err)
	}
	if _, err := history.SetTag(ctx, e, "r", "t", kilolock.Latest, history.TagOptions{Description: "avant la migration – שלום"}); err != nil {
		t.Errorf("a description in two scripts: %v", err)
	}
}
