package httpbackend

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy/trust"
)

// BenchmarkWorkloadGET is what workload identity adds to a request: a GET
// of a small state on the authenticated lane with an automation token
// (klt_, one store read) beside the same GET with a CI job's ID token
// (RS256, ES256) verified with a warm key cache against the environment's
// policies (one store read of them): the same token on every request, as
// the requests of one run send it (its signature checked on the first),
// and a new token on each (every signature checked). The goal is at most
// 0.2 ms more at p50. It fails when a warm verification fetches the
// issuer.
func BenchmarkWorkloadGET(b *testing.B) {
	for _, st := range workloadStores {
		b.Run(st.name, func(b *testing.B) {
			first, second := st.open(b)
			f := newWorkloadFixture(b, first, second)
			// kld's defaults: keys refreshed every 5 minutes.
			env := newEnvOn(b, first, Options{Auth: AuthToken, OperatorToken: operatorSecret, Trust: defaultVerifier(b, f)})
			f.addPolicy(b, env, f.policyBody("read-write"))
			// Ten policies of other repositories beside it, as an
			// operator's environment might hold.
			for i := range 10 {
				body := f.policyBody("read")
				body["claims"] = map[string]string{"repository": fmt.Sprintf("org/other-%d", i)}
				f.addPolicy(b, env, body)
			}
			doc := stateDoc(b, "lineage-bench", 1, map[string]string{"a": "1", "b": "2"})
			if w := env.do("POST", f.path("app-prod"), doc, append(basic(f.ws, f.tenant.auto[0]), "Content-MD5", md5Of(doc))...); w.Code != http.StatusOK {
				b.Fatalf("seed the state: %d %s", w.Code, w.Body)
			}
			for _, c := range []struct {
				name   string
				secret func() string
			}{
				{"token", func() string { return f.tenant.auto[0] }},
				{"id-token-RS256", constant(f.token(b, f.iss.Key("RS256"), nil))},
				{"id-token-ES256", constant(f.token(b, f.iss.Key("ES256"), nil))},
				{"new-id-token-RS256", func() string { return f.token(b, f.iss.Key("RS256"), nil) }},
				{"new-id-token-ES256", func() string { return f.token(b, f.iss.Key("ES256"), nil) }},
			} {
				b.Run(c.name, func(b *testing.B) {
					// req mints (untimed), then serves one GET: its status
					// and how long it took.
					req := func() (int, time.Duration) {
						b.StopTimer()
						secret := c.secret()
						b.StartTimer()
						start := time.Now()
						r := httptest.NewRequest("GET", f.path("app-prod"), nil)
						r.SetBasicAuth(f.ws, secret)
						w := httptest.NewRecorder()
						env.h.ServeHTTP(w, r)
						return w.Code, time.Since(start)
					}
					if code, _ := req(); code != http.StatusOK {
						b.Fatalf("GET: %d", code)
					}
					fetches := f.iss.Fetches()
					took := make([]time.Duration, 0, b.N)
					b.ReportAllocs()
					for b.Loop() {
						code, d := req()
						if code != http.StatusOK {
							b.Fatal("GET refused")
						}
						took = append(took, d)
					}
					if n := f.iss.Fetches() - fetches; n != 0 {
						b.Fatalf("%d fetches of the issuer with a warm cache", n)
					}
					slices.Sort(took)
					b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
					b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
				})
			}
		})
	}
}

// BenchmarkWorkloadUnknownKeyFlood sends kld a flood of ID tokens naming
// key ids the issuer never published, from 32 clients at once, with the
// default fetch interval (10 s): each is refused 401, and the issuer's
// JWKS is fetched at most once per 10 s however many arrive. It reports
// the fetches the flood caused and their rate per 10 s.
func BenchmarkWorkloadUnknownKeyFlood(b *testing.B) {
	first, second := workloadStores[0].open(b)
	f := newWorkloadFixture(b, first, second)
	env := newEnvOn(b, first, Options{Auth: AuthToken, OperatorToken: operatorSecret, Trust: defaultVerifier(b, f)})
	f.addPolicy(b, env, f.policyBody("read-write"))
	k := f.iss.Key("RS256")
	if w := env.do("GET", f.path("app-x"), nil, basic(f.ws, f.token(b, k, nil))...); w.Code != http.StatusNotFound && w.Code != http.StatusOK {
		b.Fatalf("warm-up GET: %d %s", w.Code, w.Body)
	}
	const distinct = 1000
	tokens := make([]string, distinct)
	for i := range tokens {
		tokens[i] = f.iss.SignWithHeader(b, k, map[string]any{"alg": "RS256", "kid": fmt.Sprintf("flood-%d", i)}, f.iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main"))
	}
	before := f.iss.JWKSFetches()
	start := time.Now()
	var mu sync.Mutex
	i := 0
	b.SetParallelism(16) // 16 x GOMAXPROCS clients
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			tok := tokens[i%distinct]
			i++
			mu.Unlock()
			r := httptest.NewRequest("GET", f.path("app-x"), nil)
			r.SetBasicAuth(f.ws, tok)
			w := httptest.NewRecorder()
			env.h.ServeHTTP(w, r)
			if w.Code != http.StatusUnauthorized {
				b.Errorf("a token of an unknown key id: %d %s", w.Code, w.Body)
			}
		}
	})
	elapsed := time.Since(start)
	fetches := f.iss.JWKSFetches() - before
	b.ReportMetric(float64(fetches), "jwks-fetches")
	b.ReportMetric(float64(fetches)/max(elapsed.Seconds()/10, 1), "fetches-per-10s")
	if float64(fetches) > elapsed.Seconds()/10+1 {
		b.Errorf("%d JWKS fetches in %s for %d tokens of unknown key ids: want at most one per 10 s", fetches, elapsed, b.N)
	}
}

// defaultVerifier is a verifier of f's issuer with the default intervals.
func defaultVerifier(t testing.TB, f *workloadFixture) *trust.Verifier {
	t.Helper()
	client, err := trust.NewHTTPClient(f.iss.CAFile())
	mustDo(t, err)
	v, err := trust.NewVerifier(trust.Options{HTTPClient: client})
	mustDo(t, err)
	return v
}

func constant(s string) func() string { return func() string { return s } }
