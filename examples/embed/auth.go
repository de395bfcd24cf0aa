package main

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireToken lets a request through when it carries token, either as the
// basic-auth password (what Terraform's http backend sends from its
// username/password settings) or as "Authorization: Bearer <token>" (what
// scripts and kl send). Anything else gets 401.
//
// This is the service's own policy: KiloLock's handler knows nothing of it,
// which is the point of embedding.
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var got string
		if _, pass, ok := r.BasicAuth(); ok {
			got = pass
		} else if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			got = b
		}
		if got == "" || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="kilolock-embed"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong credentials",
				"send the service token as the basic-auth password (terraform: password = ...) or as a bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}
