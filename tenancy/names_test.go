package tenancy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/tenancy"
)

// TestControlNames: every name and id the control plane takes is bounded
// and validated before it reaches the store, with a 400 (an *InvalidError)
// whose message does not echo a huge value back; nothing is stored or
// audited. On PostgreSQL a NUL byte would otherwise fail the statement.
func TestControlNames(t *testing.T) {
	huge := strings.Repeat("a", 100<<10)
	eachControl(t, func(t *testing.T, c *tenancy.Control) {
		ctx := context.Background()
		by := kilolock.Caller{Actor: "op"}
		ws, err := c.CreateWorkspace(ctx, by, "Acme Corp", "", "alice@example.com")
		if err != nil {
			t.Fatalf("a workspace named with a space, owned by an email address: %v", err)
		}
		env, err := c.CreateEnvironment(ctx, by, ws.ID, "prod")
		if err != nil {
			t.Fatal(err)
		}
		pat, _, err := c.IssueToken(ctx, by, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice@example.com", Name: "Laptop – café"})
		if err != nil {
			t.Fatalf("a token named in Unicode: %v", err)
		}
		_, before := enginetest.AuditLog(t, c)
		workspacesBefore, _ := c.Workspaces(ctx)
		tokensBefore, _ := c.Tokens(ctx, "")

		createWS := func(n, owner string) func() error {
			return func() error { _, err := c.CreateWorkspace(ctx, by, n, "", owner); return err }
		}
		member := func(ws, user string) func() error {
			return func() error { _, err := c.PutMember(ctx, by, ws, user, ""); return err }
		}
		issue := func(req tenancy.TokenRequest) func() error {
			return func() error { _, _, err := c.IssueToken(ctx, by, req); return err }
		}
		tests := []struct {
			name string
			call func() error
			code string
		}{
			{"100 KB workspace name", createWS(huge, ""), "invalid_workspace"},
			{"workspace name of 129 characters", createWS(strings.Repeat("é", 129), ""), "invalid_workspace"},
			{"NUL in a workspace name", createWS("ac\x00me", ""), "invalid_workspace"},
			{"newline in a workspace name", createWS("acme\nERRO panic", ""), "invalid_workspace"},
			{"invalid UTF-8 in a workspace name", createWS("ac\xffme", ""), "invalid_workspace"},
			{"workspace name of spaces", createWS("   ", ""), "invalid_workspace"},
			{"NUL in an owner", createWS("acme", "al\x00ice"), "invalid_member"},
			{"100 KB owner", createWS("acme", huge), "invalid_member"},
			{"100 KB slug", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, huge); return err }, "invalid_slug"},
			{"NUL in a slug", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, "pr\x00d"); return err }, "invalid_slug"},
			{"NUL in a member", member(ws.ID, "b\x00b"), "invalid_member"},
			{"slash in a member", member(ws.ID, "bob/admin"), "invalid_member"},
			{"space in a member", member(ws.ID, "bob smith"), "invalid_member"},
			{"100 KB member", member(ws.ID, huge), "invalid_member"},
			{"remove a 100 KB member", func() error { return c.RemoveMember(ctx, by, ws.ID, huge) }, "invalid_member"},
			{"100 KB token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: huge}), "invalid_token"},
			{"NUL in a token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: "ci\x00"}), "invalid_token"},
			{"escape in a token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: "ci\x1b[31m"}), "invalid_token"},
			{"C1 control in a token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: "ci\u009b31m"}), "invalid_token"},
			{"right-to-left override in a workspace name", createWS("Acme\u202egnp.exe", ""), "invalid_workspace"},
			{"left-to-right embedding in a workspace name", createWS("\u202aAcme", ""), "invalid_workspace"},
			{"pop directional formatting in a workspace name", createWS("Acme\u202c", ""), "invalid_workspace"},
			{"isolates in a workspace name", createWS("\u2066Acme\u2069", ""), "invalid_workspace"},
			{"right-to-left mark in a workspace name", createWS("Acme\u200f", ""), "invalid_workspace"},
			{"zero-width space in a workspace name", createWS("Ac\u200bme", ""), "invalid_workspace"},
			{"byte order mark in a workspace name", createWS("\ufeffAcme", ""), "invalid_workspace"},
			{"tag characters in a workspace name", createWS("Acme\U000e0041\U000e0042", ""), "invalid_workspace"},
			{"line separator in a workspace name", createWS("Acme\u2028Corp", ""), "invalid_workspace"},
			{"right-to-left override in a token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: "ci\u202e"}), "invalid_token"},
			{"first strong isolate in a token name", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Name: "\u2068ci"}), "invalid_token"},
			{"NUL in a PAT's user", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "b\x00b"}), "invalid_member"},
			{"100 KB environment id of a token", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: "env_" + huge}), "invalid_id"},
			{"NUL in a workspace id", func() error { _, err := c.SuspendWorkspace(ctx, by, "ws_\x00"); return err }, "invalid_id"},
			{"100 KB workspace id", func() error { _, err := c.ResumeWorkspace(ctx, by, "ws_"+huge); return err }, "invalid_id"},
			{"NUL in the workspace of an environment", func() error { _, err := c.CreateEnvironment(ctx, by, "ws_\x00", "prod"); return err }, "invalid_id"},
			{"NUL in the workspace listed", func() error { _, err := c.Environments(ctx, "ws_\x00"); return err }, "invalid_id"},
			{"NUL in the workspace of a member", member("ws_\x00", "bob"), "invalid_id"},
			{"NUL in the members' workspace", func() error { _, err := c.Members(ctx, "ws_\x00"); return err }, "invalid_id"},
			{"NUL in a token id", func() error { return c.RevokeToken(ctx, by, "tok_\x00") }, "invalid_id"},
			{"NUL in a granted token", func() error { _, err := c.AddGrant(ctx, by, "tok_\x00", env.PublicID); return err }, "invalid_id"},
			{"NUL in a granted environment", func() error { _, err := c.AddGrant(ctx, by, pat.ID, "env_\x00"); return err }, "invalid_id"},
			{"NUL in a revoked grant", func() error { return c.RevokeGrant(ctx, by, pat.ID, "env_\x00") }, "invalid_id"},
			{"NUL in a kind of token listed", func() error { _, err := c.Tokens(ctx, "auto\x00"); return err }, "invalid_token"},
			{"NUL in a token's grants", func() error { _, err := c.Grants(ctx, "tok_\x00"); return err }, "invalid_id"},
			{"NUL in an archived state's environment", func() error { return c.ArchiveState(ctx, by, ws.ID, "env_\x00", "app") }, "invalid_id"},
			{"NUL in an archived state", func() error { return c.ArchiveState(ctx, by, ws.ID, env.PublicID, "a\x00p") }, "invalid_state_name"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.call()
				var ie *kilolock.InvalidError
				if !errors.As(err, &ie) || ie.Code != tt.code || ie.Hint == "" {
					t.Fatalf("err = %T %.300q, want an *InvalidError %s with a hint", err, fmt.Sprint(err), tt.code)
				}
				if len(ie.Message) > 300 || strings.ContainsFunc(ie.Message, func(c rune) bool {
					return c < 0x20 || c >= 0x7f && c <= 0x9f || c >= 0x200b && c <= 0x200f || c >= 0x2028 && c <= 0x202e || c >= 0x2060 && c <= 0x206f || c == 0xfeff || c >= 0xe0000
				}) {
					t.Errorf("the message echoes the value: %d bytes: %.200q", len(ie.Message), ie.Message)
				}
			})
		}
		if _, after := enginetest.AuditLog(t, c); !slices.Equal(after, before) {
			t.Errorf("refusals were audited: %q", after[len(before):])
		}
		if got, _ := c.Workspaces(ctx); len(got) != len(workspacesBefore) {
			t.Errorf("refused requests created workspaces: %+v", got)
		}
		if got, _ := c.Tokens(ctx, ""); len(got) != len(tokensBefore) {
			t.Errorf("refused requests issued tokens: %+v", got)
		}
	})
}

// TestDeceptiveNames: a refusal of invisible reordering characters names
// the character, never prints it, and says what to do; names in scripts
// that need the zero-width joiners, and emoji built with them, are kept.
func TestDeceptiveNames(t *testing.T) {
	err := tenancy.ValidWorkspaceName("Acme\u202egnp.exe")
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "invalid_workspace" {
		t.Fatalf("err = %v, want invalid_workspace", err)
	}
	if !strings.Contains(ie.Message, "U+202E RIGHT-TO-LEFT OVERRIDE") || !strings.Contains(ie.Message, `\u202e`) || strings.ContainsRune(ie.Message, '\u202e') {
		t.Errorf("message %q: want the character named and escaped, never raw", ie.Message)
	}
	if !strings.Contains(ie.Hint, "visible text") {
		t.Errorf("hint %q: want what to do", ie.Hint)
	}
	if err := tenancy.ValidWorkspaceName("Acme\u2061"); err == nil || !strings.Contains(err.Error(), "U+2061") {
		t.Errorf("an unnamed format character: %v, want its code point", err)
	}
	for _, ok := range []string{"Acme Corp", "Laptop – café", "می\u200cخواهم", "👩\u200d💻 platform", "שלום עולם", "مرحبا"} {
		if err := tenancy.ValidWorkspaceName(ok); err != nil {
			t.Errorf("ValidWorkspaceName(%q) = %v, want nil", ok, err)
		}
	}
}

// eachControl runs test as a subtest on a Control over a fresh store of
// each kind.
func eachControl(t *testing.T, test func(t *testing.T, c *tenancy.Control)) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			c, _ := enginetest.NewControl(t, open)
			test(t, c)
		})
	})
}
