package httpbackend

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// BenchmarkAuth measures what authentication adds to a request: the same
// small state is read through a handler without auth (the local lane) and
// through one in AuthToken mode, request by request in alternation on one
// store, and the medians of both are compared. added_median_us is the
// figure the authenticated lane is held to (under 200 µs on PostgreSQL).
// The token kinds differ in what is checked: an automation token its
// environment, a PAT membership and grant as well; a LOCK (an apply's, so
// lifecycle holds are checked too) pays for reading its body twice.
func BenchmarkAuth(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			st, err := be.open(b)
			if err != nil {
				b.Fatal(err)
			}
			logger := log.NewWithOptions(os.Stderr, log.Options{Level: log.ErrorLevel})
			engine := kilolock.NewEngine(st, kilolock.Options{Logger: logger})
			open := New(engine, Options{Logger: logger})
			authed := New(engine, Options{Logger: logger, Auth: AuthToken, OperatorToken: operatorSecret})
			ts := st.(tenancy.TenantStore)
			f := seedTenant(b, ts, "acme", "prod")
			doc := stateDoc(b, "lin-bench", 1, map[string]string{"web": "v1", "db": "v1"})
			tenant, _ := tenancy.TenantStateName(f.ws.ID, f.envs[0].PublicID, "app")
			for _, name := range []string{"app", tenant} {
				if _, err := engine.Write(b.Context(), name, doc, kilolock.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			creds := map[string][]string{"automation": basic(f.ws.ID, f.auto[0]), "pat": basic(f.ws.ID, f.pat)}
			for _, kind := range []string{"automation", "pat"} {
				for _, method := range []string{"GET", "LOCK"} {
					b.Run(kind+"/"+method, func(b *testing.B) {
						serve := func(h *Handler, target string, header []string) time.Duration {
							var body []byte
							if method == "LOCK" {
								body = mustJSON(b, lockInfo("bench", "ci"))
							}
							r := httptest.NewRequest(method, target, bytesReader(body))
							for i := 0; i+1 < len(header); i += 2 {
								r.Header.Set(header[i], header[i+1])
							}
							w := httptest.NewRecorder()
							start := time.Now()
							h.ServeHTTP(w, r)
							d := time.Since(start)
							if w.Code != http.StatusOK {
								b.Fatalf("%s %s = %d %s", method, target, w.Code, w.Body)
							}
							if method == "LOCK" { // release it, untimed
								r := httptest.NewRequest("UNLOCK", target, bytesReader(body))
								for i := 0; i+1 < len(header); i += 2 {
									r.Header.Set(header[i], header[i+1])
								}
								h.ServeHTTP(httptest.NewRecorder(), r)
							}
							return d
						}
						var plain, auth []time.Duration
						b.ResetTimer()
						for range b.N {
							plain = append(plain, serve(open, "/v1/states/app", nil))
							auth = append(auth, serve(authed, f.path(0, "app"), creds[kind]))
						}
						b.StopTimer()
						pm, am := median(plain), median(auth)
						b.ReportMetric(float64(pm.Nanoseconds())/1e3, "none_median_us")
						b.ReportMetric(float64(am.Nanoseconds())/1e3, "auth_median_us")
						b.ReportMetric(float64((am-pm).Nanoseconds())/1e3, "added_median_us")
					})
				}
			}
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bytesReader is a body for httptest.NewRequest: none when b is nil.
func bytesReader(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}
