package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// Gate decides what a request may see: in kld, the authenticated lane's
// own decision (the one tofu's requests get), so that the web view and
// the backend never disagree.
type Gate interface {
	// Viewer returns what the token secret reaches, or the denial (an
	// error Describe maps to a 401 or 403).
	Viewer(r *http.Request, secret string) (*Viewer, error)
	// Read decides whether secret may read the state kept under the
	// internal name (tenancy.TenantStateName); nil when it may.
	Read(r *http.Request, secret, name string) error
}

// Viewer is who is looking and what they reach.
type Viewer struct {
	// Actor names the token in logs ("tok_…", "pat:tok_… user:alice").
	Actor string
	// Environments are the environments the token reaches.
	Environments []Scope
}

// Scope is one environment a viewer reaches.
type Scope struct {
	WorkspaceID string
	PublicID    string // env_…
	Slug        string
}

// prefix is the start of the internal names of the scope's states.
func (s Scope) prefix() string { return s.WorkspaceID + "." + s.PublicID + "." }

// Cookies of the web view. Both are httpOnly and SameSite=Strict, scoped
// to Prefix: the token never reaches a script or another site's request.
const (
	tokenCookie = "kl_ui_token"
	csrfCookie  = "kl_ui_csrf"
)

// errSignIn asks the browser to sign in first.
var errSignIn = errors.New("sign in first")

// visit is one request's viewer: nil Viewer when no Gate is set (every
// local state is visible).
type visit struct {
	Viewer *Viewer
	// Gated says a Gate decides (kld --auth=token).
	Gated bool
	// CSRF is the form token of the browser, for the logout form.
	CSRF   string
	secret string
}

// visit identifies the viewer of r: with a Gate, from the token cookie,
// each request decided afresh, so a revoked token or a removed member is
// refused on the next page.
func (u *UI) visit(w http.ResponseWriter, r *http.Request) (*visit, error) {
	v := &visit{Gated: u.o.Gate != nil, CSRF: u.csrfToken(w, r)}
	if u.o.Gate == nil {
		return v, nil
	}
	c, err := r.Cookie(tokenCookie)
	if err != nil || c.Value == "" {
		return v, errSignIn
	}
	v.secret = c.Value
	viewer, err := u.o.Gate.Viewer(r, c.Value)
	if err != nil {
		// A token that no longer works signs the browser out.
		u.clearCookie(w, r, tokenCookie)
		return v, err
	}
	v.Viewer = viewer
	return v, nil
}

// visible reports whether v may see the state kept as name. Without a
// Gate only local names are served (a tenant's state never shows on an
// open server); with one, the Gate decides.
func (u *UI) readable(r *http.Request, v *visit, name string) error {
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	if !v.Gated {
		if err := tenancy.LocalStateName(name); err != nil {
			return notFound(name)
		}
		return nil
	}
	return u.o.Gate.Read(r, v.secret, name)
}

// notFound is the 404 of a state this viewer does not see, which does not
// say whether it exists.
func notFound(name string) error {
	return &problemError{Problem{Status: http.StatusNotFound, Code: "not_found", Message: "no state " + name + " is visible here", Hint: "pick a state from " + Prefix}}
}

// label is how a state's internal name is shown to v: a tenant's state as
// ENV-SLUG/NAME.
func (v *visit) label(name string) string {
	if v.Viewer != nil {
		for _, s := range v.Viewer.Environments {
			if rest, ok := strings.CutPrefix(name, s.prefix()); ok {
				return s.Slug + "/" + rest
			}
		}
	}
	return name
}

// csrfToken returns the browser's form token, setting a new one when it
// has none: forms carry it in a hidden field and POSTs must match the
// cookie (a double submit that a cross-site page cannot read or set).
func (u *UI) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	b := make([]byte, 16)
	rand.Read(b)
	t := hex.EncodeToString(b)
	u.setCookie(w, r, csrfCookie, t)
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: t})
	return t
}

// checkForm refuses a POST that is not from the web view's own pages: a
// cross-site Origin or Sec-Fetch-Site, or a form token that does not
// match the cookie.
func (u *UI) checkForm(r *http.Request) error {
	refused := &problemError{Problem{Status: http.StatusForbidden, Code: "csrf_refused",
		Message: "the form was not sent from this server's own page", Hint: "open " + Prefix + "login and send the form from there"}}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return refused
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		// Behind a proxy the Host kld sees may be the proxy's upstream:
		// the public URL's host is this server's own origin too.
		if ou, err := url.Parse(o); err != nil || ou.Host != r.Host && (u.o.PublicURL == nil || ou.Host != u.o.PublicURL.Host) {
			return refused
		}
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		return refused
	}
	return nil
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, name, value string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.overTLS(r)})
}

func (u *UI) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: u.overTLS(r)})
}

// overTLS reports whether the browser reached r over HTTPS. Its cookies
// are then Secure: never sent over plain HTTP, where anyone on the path
// would read the token they hold.
func (u *UI) overTLS(r *http.Request) bool { return OverTLS(r, u.o.PublicURL) }

// OverTLS reports whether the client reached r over HTTPS: the server's own
// TLS, or that of a proxy in front of it whose URL public is (nil when
// none is known).
func OverTLS(r *http.Request, public *url.URL) bool {
	return r.TLS != nil || public != nil && public.Scheme == "https"
}

// loginData is the sign-in form.
type loginData struct {
	Next    string
	Problem *Problem
}

// loginForm serves GET /ui/login.
func (u *UI) loginForm(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	v := &visit{Gated: u.o.Gate != nil, CSRF: u.csrfToken(w, r)}
	if u.o.Gate == nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	u.render(w, r, http.StatusOK, &view{Template: "login", Title: "Sign in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}}, v)
}

// maxTokenBytes bounds the token field: a token is 68 characters.
const maxTokenBytes = 4 << 10

// login serves POST /ui/login: the token is decided by the Gate like any
// request, and kept in an httpOnly cookie only when it reaches something.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	v := &visit{Gated: u.o.Gate != nil, CSRF: u.csrfToken(w, r)}
	if u.o.Gate == nil {
		u.fail(w, r, v, &problemError{Problem{Status: http.StatusNotFound, Code: "auth_disabled", Message: "this server runs without authentication (--auth=none): there is nothing to sign in to", Hint: "open " + Prefix}})
		return
	}
	if err := u.checkForm(r); err != nil {
		u.fail(w, r, v, err)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	secret := strings.TrimSpace(r.PostFormValue("token"))
	var p *Problem
	switch {
	case secret == "":
		p = &Problem{Status: http.StatusUnauthorized, Code: "credentials_missing", Message: "no token was given", Hint: "paste an automation token (klt_…) or a personal access token (klp_…)"}
	case len(secret) > maxTokenBytes:
		p = &Problem{Status: http.StatusBadRequest, Code: "token_too_long", Message: "the token is longer than any token kld issues", Hint: "paste the token exactly as kl token issue or kl pat create printed it"}
	default:
		viewer, err := u.o.Gate.Viewer(r, secret)
		if err != nil {
			d := u.o.Describe(r, err)
			p = &d
		} else if len(viewer.Environments) == 0 {
			p = &Problem{Status: http.StatusForbidden, Code: "nothing_reachable", Message: "the token is valid but reaches no environment", Hint: "ask an operator for a grant (kl grant add TOKEN ENV) or a membership; kl whoami --token … says why"}
		}
	}
	if p != nil {
		w.Header().Set("X-Kilolock-Error", p.Code)
		u.render(w, r, p.Status, &view{Template: "login", Title: "Sign in", Data: loginData{Next: next, Problem: p}}, v)
		return
	}
	u.setCookie(w, r, tokenCookie, secret)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout serves POST /ui/logout.
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := u.checkForm(r); err != nil {
		u.fail(w, r, &visit{Gated: u.o.Gate != nil}, err)
		return
	}
	u.clearCookie(w, r, tokenCookie)
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// safeNext keeps a redirect target inside the web view.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
