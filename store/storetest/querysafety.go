package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// testQuerySafety checks what keeps users' SQL harmless: it reads the
// documented relations and nothing else, it stops at its deadline, and its
// answer is bounded in rows and in bytes, as it is read.
func testQuerySafety(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	c := next(t, s, "safe")
	c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "web"), intKey(0), `{"id":"i-0"}`))
	commit(t, s, "safe", c)
	lock(t, s, "safe", "l-1", kilolock.LockExclusive)
	if tenants, ok := s.(tenancy.TenantStore); ok {
		tok, _, err := tenancy.NewToken(tenancy.TokenOperator)
		if err != nil {
			t.Fatal(err)
		}
		if err := tenants.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if err := tenants.AppendAudit(ctx, &kilolock.AuditEntry{Actor: "op", Action: "token.issue", Target: tok.ID}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("reads the documented relations", func(t *testing.T) {
		for _, r := range kilolock.QueryRelations {
			if _, err := s.Query(ctx, kilolock.QueryLimits{}, "SELECT * FROM "+r); err != nil {
				t.Errorf("SELECT * FROM %s: %v", r, err)
			}
		}
		res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT count(*) FROM resources r JOIN version_history v ON v.state = r.state`)
		if err != nil || asInt(t, res.Rows[0][0]) != 1 {
			t.Errorf("a join of two views: %v %v", res, err)
		}
	})
	t.Run("reads nothing else", func(t *testing.T) {
		for _, q := range []string{
			`SELECT * FROM tokens`,
			`SELECT secret_hash FROM tokens`,
			`SELECT r.address, t.secret_hash FROM resources r, tokens t`,
			`SELECT address FROM resources WHERE EXISTS (SELECT 1 FROM tokens WHERE secret_hash LIKE 'a%')`,
			`SELECT body FROM payloads`,
			`SELECT * FROM locks`,
			`SELECT * FROM states`,
			`SELECT * FROM state_versions`,
			`SELECT * FROM version_raw`,
			`SELECT * FROM instance_intervals`,
			`SELECT * FROM kl_schema_version`,
		} {
			_, err := s.Query(ctx, kilolock.QueryLimits{}, q)
			errorIs(t, err, kilolock.ErrReadOnly)
			if e := errorAs[*kilolock.RefusedError](t, err); e.Code != "query_denied" || !strings.Contains(e.Hint, "resources") {
				t.Errorf("%s: %+v, want code query_denied and a hint naming the views", q, e)
			}
		}
	})

	// endless is a statement that runs until it is stopped.
	const endless = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`
	timedOut := func(t *testing.T, err error) {
		t.Helper()
		if e := errorAs[*kilolock.InvalidError](t, err); e.Code != "query_timeout" {
			t.Errorf("error %+v, want code query_timeout", e)
		}
	}
	t.Run("stops at its deadline", func(t *testing.T) {
		_, err := s.Query(ctx, kilolock.QueryLimits{Timeout: 200 * time.Millisecond}, endless)
		timedOut(t, err)
	})
	t.Run("endless queries do not hold the store", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 6) // more than a store's query connections
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.Query(ctx, kilolock.QueryLimits{Timeout: 300 * time.Millisecond}, endless) })
		}
		wg.Wait()
		for _, err := range errs {
			timedOut(t, err)
		}
		if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT 1`); err != nil || asInt(t, res.Rows[0][0]) != 1 {
			t.Errorf("SELECT 1 after them: %v %v", res, err)
		}
	})
	t.Run("the caller's end is not a timeout", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := s.Query(cctx, kilolock.QueryLimits{Timeout: time.Minute}, endless)
		var ie *kilolock.InvalidError
		if err == nil || errors.As(err, &ie) {
			t.Errorf("error %v, want the context's", err)
		}
	})

	// rows is a statement of n rows of a 20 KiB value each.
	const rows = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) SELECT i, $2 AS pad FROM n`
	pad := strings.Repeat("x", 20<<10)
	t.Run("rows are capped as asked", func(t *testing.T) {
		res, err := s.Query(ctx, kilolock.QueryLimits{MaxRows: 7}, rows, 100, "p")
		if err != nil || len(res.Rows) != 7 {
			t.Fatalf("%d rows, %v; want 7", len(res.Rows), err)
		}
	})
	t.Run("the answer is capped in bytes", func(t *testing.T) {
		var err error
		allocated := HeapAllocated(func() {
			// Uncapped, 10,000 rows of 20 KiB: 200 MB.
			_, err = s.Query(ctx, kilolock.QueryLimits{MaxBytes: 1 << 20}, rows, 10_000, pad)
		})
		e := errorAs[*kilolock.InvalidError](t, err)
		if e.Code != "query_too_large" || !strings.Contains(e.Message, "1048576 bytes") || !strings.Contains(e.Hint, "LIMIT") {
			t.Errorf("error %+v, want code query_too_large naming the limit, with a hint", e)
		}
		if allocated > 32<<20 {
			t.Errorf("the refused query allocated %d MiB, want at most 32", allocated>>20)
		}
		res, err := s.Query(ctx, kilolock.QueryLimits{MaxBytes: 1 << 20}, rows, 40, pad)
		if err != nil || len(res.Rows) != 40 {
			t.Errorf("an answer below the cap: %d rows, %v", len(res.Rows), err)
		}
	})
}
