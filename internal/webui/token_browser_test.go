package webui_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/tenancy"
)

// seeded is two workspaces: acme (environments prod and dev, a state in
// each) and rival (prod, one state whose attributes hold rivalMarker).
type seeded struct {
	acmeProd, acmeDev, rivalProd  string // internal state names
	prodRead, acmePAT, rivalToken string // token secrets
}

const rivalMarker = "rival-marker-7f3a"

func seedTenancy(t testing.TB, e *kilolock.Engine) *seeded {
	t.Helper()
	ctx := context.Background()
	c := tenancy.NewControl(e.Store().(tenancy.TenantStore))
	by := kilolock.Caller{Actor: "test"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	state := func(ws *tenancy.Workspace, env *tenancy.Environment, name, attr string) string {
		t.Helper()
		internal, err := tenancy.TenantStateName(ws.ID, env.PublicID, name)
		must(err)
		doc := netDoc(1, attr, secretBefore, "www-1", "10.0.1.0/24")
		_, err = e.Write(ctx, internal, doc, kilolock.WriteOptions{Actor: "seed"})
		must(err)
		return internal
	}
	token := func(req tenancy.TokenRequest) string {
		t.Helper()
		_, secret, err := c.IssueToken(ctx, by, req)
		must(err)
		return secret
	}
	acme, err := c.CreateWorkspace(ctx, by, "acme", tenancy.WorkspaceOrganization, "alice")
	must(err)
	rival, err := c.CreateWorkspace(ctx, by, "rival", tenancy.WorkspaceOrganization, "mallory")
	must(err)
	prod, err := c.CreateEnvironment(ctx, by, acme.ID, "prod")
	must(err)
	dev, err := c.CreateEnvironment(ctx, by, acme.ID, "dev")
	must(err)
	rprod, err := c.CreateEnvironment(ctx, by, rival.ID, "prod")
	must(err)
	tn := &seeded{
		acmeProd:   state(acme, prod, "network", "ami-acme-prod"),
		acmeDev:    state(acme, dev, "app", "ami-acme-dev"),
		rivalProd:  state(rival, rprod, "payments", rivalMarker),
		prodRead:   token(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: prod.PublicID, Scope: tenancy.ScopeRead}),
		acmePAT:    token(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice"}),
		rivalToken: token(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: rprod.PublicID}),
	}
	patID := ""
	toks, err := c.Tokens(ctx, tenancy.TokenPersonal)
	must(err)
	for _, tok := range toks {
		if tok.UserID == "alice" {
			patID = tok.ID
		}
	}
	for _, env := range []string{prod.PublicID, dev.PublicID} {
		_, err := c.AddGrant(ctx, by, patID, env)
		must(err)
	}
	return tn
}

// TestBrowserTokenLogin signs in through the token form in Chromium: a
// wrong token is refused, a right one shows exactly the states it reaches
// (the backend lane's decision), and signing out forgets it.
func TestBrowserTokenLogin(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			tn := seedTenancy(t, e)
			srv := server(t, e, httpbackend.Options{Auth: httpbackend.AuthToken, OperatorToken: "klo_test-operator"})
			b := newBrowser(t)

			b.open(srv.URL + "/ui/")
			if loc := b.location(); !strings.HasPrefix(loc, srv.URL+"/ui/login?next=") {
				t.Fatalf("an anonymous visit went to %s, want the sign-in form", loc)
			}
			signIn := func(secret string, status int) {
				t.Helper()
				if status != 0 {
					b.expectStatus(srv.URL+"/ui/login", status)
				}
				b.do("sign in", chromedp.SetValue(chromedp.CSS("#token"), secret), chromedp.Submit(chromedp.CSS("form.login")),
					chromedp.WaitReady(chromedp.CSS("main h1")))
				b.checkConsole("sign in")
			}
			signIn("klt_0000000000000000000000000000000000000000000000000000000000000000", 401)
			if got := b.attrs(".problem", "data-error"); !slices.Equal(got, []string{"credentials_invalid"}) {
				t.Errorf("a wrong token got %v, want credentials_invalid", got)
			}
			b.screenshot("login-refused", false)
			b.open(srv.URL + "/ui/")
			if loc := b.location(); !strings.Contains(loc, "/ui/login") {
				t.Errorf("after a wrong token /ui/ went to %s, want the sign-in form", loc)
			}

			signIn(tn.prodRead, 0)
			if loc := b.location(); loc != srv.URL+"/ui/" {
				t.Errorf("signed in to %s, want /ui/", loc)
			}
			if got := b.attrs("#states tbody tr", "data-state"); !slices.Equal(got, []string{tn.acmeProd}) {
				t.Errorf("the prod read token sees %v, want only %s", got, tn.acmeProd)
			}
			if row := b.text("#states tbody tr"); !strings.Contains(row, "prod/network") {
				t.Errorf("state row %q, want the label prod/network", row)
			}
			if c := get(b, "document.cookie", chromedp.Evaluate[string]("document.cookie")); strings.Contains(c, "kl_ui_token") {
				t.Errorf("a script can read the token cookie: %q", c)
			}
			b.screenshot("states-token", false)
			for _, other := range []string{tn.acmeDev, tn.rivalProd} {
				b.expectStatus(srv.URL+"/ui/states/"+other, 404)
				b.open(srv.URL + "/ui/states/" + url.PathEscape(other))
				if got := b.attrs(".problem", "data-error"); len(got) != 1 || !strings.HasSuffix(got[0], "not_found") {
					t.Errorf("the prod token opening %s got %v, want a not-found page", other, got)
				}
				html := get(b, "page HTML", chromedp.Evaluate[string]("document.documentElement.outerHTML"))
				if strings.Contains(html, rivalMarker) || strings.Contains(html, "ami-acme-dev") {
					t.Errorf("%s leaks another environment's state", other)
				}
			}
			b.open(srv.URL + "/ui/states/" + url.PathEscape(tn.acmeProd) + "/search?text=ami-acme")
			if got := b.attrs("#results tbody tr", "data-address"); !slices.Equal(got, []string{"aws_instance.web[1]"}) {
				t.Errorf("search in the reachable state = %v", got)
			}

			b.do("sign out", chromedp.Click(chromedp.CSS("form.who button")), chromedp.WaitReady(chromedp.CSS("form.login")))
			b.open(srv.URL + "/ui/")
			if loc := b.location(); !strings.Contains(loc, "/ui/login") {
				t.Errorf("after signing out /ui/ went to %s, want the sign-in form", loc)
			}

			signIn(tn.acmePAT, 0)
			if got := b.attrs("#states tbody tr", "data-state"); !slices.Equal(got, []string{tn.acmeDev, tn.acmeProd}) {
				t.Errorf("alice's PAT sees %v, want both acme states", got)
			}
		})
	}
}
