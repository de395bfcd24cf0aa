package trust_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy/trust"
)

// BenchmarkVerifyWarm is what verifying an ID token adds to a request once
// the issuer's keys are cached: the goal is at most 0.2 ms p50. Ten
// policies of the environment stand beside the one that matches, as an
// operator's would. It reports p50 and p99 of single verifications.
func BenchmarkVerifyWarm(b *testing.B) {
	f := newFixture(b, trust.Options{})
	policies := make([]trust.Policy, 0, 11)
	for range 10 {
		p := policyOf(b, f.iss.URL)
		p.Claims = map[string]string{"repository": "org/other-" + p.ID}
		policies = append(policies, p)
	}
	policies = append(policies, f.policy)
	for _, alg := range []string{"RS256", "ES256"} {
		b.Run(alg, func(b *testing.B) {
			tok := f.token(b, alg, nil)
			ctx := context.Background()
			if _, err := f.v.Verify(ctx, tok, policies, "app-prod"); err != nil {
				b.Fatal(err)
			}
			fetches := f.iss.Fetches()
			b.ReportAllocs()
			timeEach(b, func() bool { _, err := f.v.Verify(ctx, tok, policies, "app-prod"); return err == nil })
			if n := f.iss.Fetches() - fetches; n != 0 {
				b.Fatalf("%d fetches with a warm cache: want none", n)
			}
		})
	}
}

// BenchmarkSignatureAlone is the floor under BenchmarkVerifyWarm: the
// public-key operation of each algorithm and nothing else, measured on
// the same machine at the same time, so the figures can be read apart
// from the machine's load.
func BenchmarkSignatureAlone(b *testing.B) {
	for _, alg := range []string{"RS256", "ES256"} {
		b.Run(alg, func(b *testing.B) {
			digest := sha256.Sum256([]byte("header.payload"))
			var verify func() bool
			switch alg {
			case "RS256":
				key, _ := rsa.GenerateKey(rand.Reader, 2048)
				sig, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
				verify = func() bool { return rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, digest[:], sig) == nil }
			case "ES256":
				key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				sig, _ := ecdsa.SignASN1(rand.Reader, key, digest[:])
				verify = func() bool { return ecdsa.VerifyASN1(&key.PublicKey, digest[:], sig) }
			}
			timeEach(b, verify)
		})
	}
}

// timeEach runs op b.N times and reports the p50 and p99 of one run: on a
// shared machine the mean mostly measures the neighbours.
func timeEach(b *testing.B, op func() bool) {
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if !op() {
			b.Fatal("operation failed")
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
}
