package httpbackend

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/tenancy"
)

// TestSecureBehindTLS: the web view's cookies are Secure, and every answer
// carries Strict-Transport-Security, when clients reach kld over HTTPS:
// its own TLS, or a proxy's that Options.PublicURL names (kld --public-url
// https://…); over plain HTTP neither, nor with a public http:// URL.
// Behind the proxy a sign-in form whose Origin is the public host is kld's
// own, though the Host kld sees is the proxy's upstream.
func TestSecureBehindTLS(t *testing.T) {
	public, _ := url.Parse("https://kl.example.com")
	plainPublic, _ := url.Parse("http://kl.example.com")
	const csrf = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name   string
		public *url.URL
		tls    bool
		secure bool
	}{
		{"plain HTTP", nil, false, false},
		{"own TLS", nil, true, true},
		{"behind a TLS proxy", public, false, true},
		{"public http URL", plainPublic, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, "", Options{Auth: AuthToken, OperatorToken: operatorSecret, PublicURL: tc.public})
			f := seedTenant(t, env.store.(tenancy.TenantStore), "a", "prod")
			srv := httptest.NewUnstartedServer(env.h)
			if tc.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			client := srv.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			origin := srv.URL
			if tc.public != nil {
				origin = tc.public.Scheme + "://" + tc.public.Host
			}
			form := url.Values{"token": {f.auto[0]}, "csrf": {csrf}}.Encode()
			req, _ := http.NewRequest("POST", srv.URL+"/ui/login", strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Cookie", "kl_ui_csrf="+csrf)
			req.Header.Set("Origin", origin)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var token *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == "kl_ui_token" {
					token = c
				}
			}
			if resp.StatusCode != http.StatusSeeOther || token == nil {
				t.Fatalf("login with Origin %s = %d %q, want 303 and the token cookie", origin, resp.StatusCode, resp.Header.Get("X-Kilolock-Error"))
			}
			if token.Secure != tc.secure || !token.HttpOnly {
				t.Errorf("token cookie %+v: Secure %v, want %v (and HttpOnly)", token, token.Secure, tc.secure)
			}
			for _, path := range []string{"/ui/login", "/healthz", "/v1/states/" + f.ws.ID + "/" + f.envs[0].PublicID + "/app"} {
				resp, err := client.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				hsts := resp.Header.Get("Strict-Transport-Security")
				if (hsts != "") != tc.secure || tc.secure && !strings.HasPrefix(hsts, "max-age=31536000") {
					t.Errorf("GET %s: Strict-Transport-Security %q, want it: %v", path, hsts, tc.secure)
				}
				if path == "/ui/login" {
					for _, c := range resp.Cookies() {
						if c.Secure != tc.secure {
							t.Errorf("GET %s: cookie %s Secure %v, want %v", path, c.Name, c.Secure, tc.secure)
						}
					}
				}
			}
		})
	}
}
