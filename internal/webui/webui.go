package webui

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kilolock/kilolock"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Problem is an error as the user sees it: the status and the
// {"error","message","hint"} of the JSON API.
type Problem struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Message string `json:"message"`
	Hint    string `json:"hint"`
}

// Options configure the web view. Describe is required; the others are
// optional.
type Options struct {
	// Describe maps an error to what the user is told: the one mapping of
	// the JSON API, so a page and the API say the same thing.
	Describe func(r *http.Request, err error) Problem
	// Gate decides who sees what; nil serves every local state to anyone
	// (kld --auth=none).
	Gate Gate
	// Extras are what other parts of the engine add to the pages: drift
	// counts, tags. Each nil field hides its column.
	Extras Extras
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// PublicURL is where browsers reach the server, when a proxy in front
	// of it terminates TLS (kld --public-url): with https its cookies are
	// Secure on every request, and a form's Origin may name its host.
	// Nil: cookies are Secure on requests that came over TLS.
	PublicURL *url.URL
}

// UI serves the web view of one Engine.
type UI struct {
	engine *kilolock.Engine
	o      Options
	// pages are parsed on the first page served, not by New: kl
	// --database builds a handler for every command and shows no page.
	pages    func() map[string]*template.Template
	assets   http.Handler
	now      func() time.Time
	assetTag string
}

// Prefix is where the web view is served.
const Prefix = "/ui/"

// New returns the web view of e.
func New(e *kilolock.Engine, o Options) *UI {
	u := &UI{engine: e, o: o, now: o.Now, pages: sync.OnceValue(parsePages)}
	if u.now == nil {
		u.now = time.Now
	}
	if u.o.Describe == nil {
		panic("webui: Options.Describe is required")
	}
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err)
	}
	u.assets = http.StripPrefix(Prefix+"assets/", http.FileServerFS(sub))
	return u
}

// parsePages parses each page's template with the layout, by name.
func parsePages() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		pages[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	return pages
}

// Routes registers the web view's routes with add (an http.ServeMux's
// HandleFunc, or a wrapper that counts them).
func (u *UI) Routes(add func(pattern string, h func(http.ResponseWriter, *http.Request))) {
	add("GET "+Prefix+"{$}", u.page(u.states))
	add("GET "+Prefix+"live", u.page(u.live))
	add("GET "+Prefix+"states/{name}", u.page(u.history))
	add("GET "+Prefix+"states/{name}/diff", u.page(u.diff))
	add("GET "+Prefix+"states/{name}/search", u.page(u.search))
	add("GET "+Prefix+"states/{name}/instance", u.page(u.instance))
	add("GET "+Prefix+"states/{name}/graph", u.page(u.graph))
	add("GET "+Prefix+"search", u.page(u.inventorySearch))
	add("GET "+Prefix+"duplicates", u.page(u.duplicates))
	add("GET "+Prefix+"login", u.loginForm)
	add("POST "+Prefix+"login", u.login)
	add("POST "+Prefix+"logout", u.logout)
	add("GET "+Prefix+"assets/", u.serveAsset)
	add(Prefix, u.page(func(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
		return nil, &problemError{Problem{Status: http.StatusNotFound, Code: "page_not_found",
			Message: fmt.Sprintf("the web view has no page %s", r.URL.Path), Hint: "start from " + Prefix + " (the states)"}}
	}))
}

// view is what a page handler renders: a template and its data.
type view struct {
	Template string
	Title    string
	// Refresh asks the page to reload itself every so many seconds.
	Refresh int
	Crumbs  []crumb
	Data    any
}

// crumb is one step of the page's breadcrumb trail.
type crumb struct{ Label, URL string }

// frame is what the layout renders around a page.
type frame struct {
	*view
	Visit *visit
}

// pageFunc handles one page for a visit whose viewer is known.
type pageFunc func(w http.ResponseWriter, r *http.Request, v *visit) (*view, error)

// page wraps a page handler: it identifies the viewer, renders the view,
// and renders failures as error pages (or JSON for clients that do not
// ask for HTML).
func (u *UI) page(fn pageFunc) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		v, err := u.visit(w, r)
		if errors.Is(err, errSignIn) {
			http.Redirect(w, r, Prefix+"login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		var pv *view
		if err == nil {
			pv, err = fn(w, r, v)
		}
		if err != nil {
			u.fail(w, r, v, err)
			return
		}
		u.render(w, r, http.StatusOK, pv, v)
	}
}

// render executes a view into a buffer first, so that a template failure
// is an error page rather than half a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, pv *view, v *visit) {
	t := u.pages()[pv.Template]
	if t == nil {
		panic("webui: no template " + pv.Template)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", frame{view: pv, Visit: v}); err != nil {
		if pv.Template == "error" {
			http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
			return
		}
		u.fail(w, r, v, fmt.Errorf("render %s: %w", pv.Template, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// problemError is a Problem decided by the web view itself.
type problemError struct{ p Problem }

func (e *problemError) Error() string { return e.p.Message }

// badParam is the 400 of a query parameter that cannot be used.
func badParam(name, message, hint string) error {
	return &problemError{Problem{Status: http.StatusBadRequest, Code: "invalid_parameter", Message: name + ": " + message, Hint: hint}}
}

// fail answers err: an error page for a browser, the API's JSON body for
// any other client.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	var pe *problemError
	p := Problem{}
	if errors.As(err, &pe) {
		p = pe.p
	} else {
		p = u.o.Describe(r, err)
	}
	w.Header().Set("X-Kilolock-Error", p.Code)
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		b, _ := json.Marshal(p)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(p.Status)
		w.Write(append(b, '\n'))
		return
	}
	if v == nil {
		v = &visit{}
	}
	u.render(w, r, p.Status, &view{Template: "error", Title: "Error: " + p.Code, Data: p}, v)
}

// serveAsset serves the embedded stylesheet, script and icon.
func (u *UI) serveAsset(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	u.assets.ServeHTTP(w, r)
}

// securityHeaders keep the pages to their own assets: no inline script,
// no framing, no sniffing, no referrer.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}
