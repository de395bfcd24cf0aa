package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// The trust policies of workload identity (tenancy/trust): one row each,
// its claims as JSON objects of strings, its max TTL in milliseconds.

var _ trust.PolicyStore = (*Store)(nil)

// CreateTrustPolicy stores p. ErrNotFound when its environment is
// missing; ErrConflict when its id is taken.
func (s *Store) CreateTrustPolicy(ctx context.Context, p *trust.Policy) error {
	claims, err := claimsJSON(p.Claims)
	if err != nil {
		return err
	}
	globs, err := claimsJSON(p.ClaimGlobs)
	if err != nil {
		return err
	}
	p.Created = p.Created.UTC().Truncate(time.Microsecond)
	if p.Created.IsZero() {
		p.Created = now()
	}
	return s.write(ctx, "create trust policy", func(tx Tx) error {
		if err := require(ctx, tx, "environment", p.EnvironmentID, `SELECT 1 FROM environments WHERE public_id = $1`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO trust_policies (id, environment_id, issuer, audience, claims, claim_globs, scope, state_pattern, max_ttl_ms, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			p.ID, p.EnvironmentID, p.Issuer, p.Audience, claims, globs, string(p.Scope), p.StatePattern, time.Duration(p.MaxTTL).Milliseconds(), p.Created)
		return err
	})
}

const trustPolicySelect = `SELECT id, environment_id, issuer, audience, claims, claim_globs, scope, state_pattern, max_ttl_ms, created_at FROM trust_policies`

func scanTrustPolicy(r Rows, p *trust.Policy) error {
	var claims, globs string
	var ttl int64
	if err := r.Scan(&p.ID, &p.EnvironmentID, &p.Issuer, &p.Audience, &claims, &globs, &p.Scope, &p.StatePattern, &ttl, &p.Created); err != nil {
		return err
	}
	return decodePolicy(p, claims, globs, ttl)
}

// decodePolicy sets p's claims, globs and max TTL from their columns.
func decodePolicy(p *trust.Policy, claims, globs string, ttl int64) error {
	p.MaxTTL = trust.Duration(time.Duration(ttl) * time.Millisecond)
	if claims != "{}" {
		if err := json.Unmarshal([]byte(claims), &p.Claims); err != nil {
			return corrupt("trust policy %s: claims: %v", p.ID, err)
		}
	}
	if globs != "{}" {
		if err := json.Unmarshal([]byte(globs), &p.ClaimGlobs); err != nil {
			return corrupt("trust policy %s: claim globs: %v", p.ID, err)
		}
	}
	return nil
}

// TrustPolicies lists an environment's policies by id, every policy when
// environmentID is empty.
func (s *Store) TrustPolicies(ctx context.Context, environmentID string) ([]trust.Policy, error) {
	if environmentID == "" {
		return list(ctx, s, "trust policies", scanTrustPolicy, trustPolicySelect+` ORDER BY id`)
	}
	return list(ctx, s, "trust policies", scanTrustPolicy, trustPolicySelect+` WHERE environment_id = $1 ORDER BY id`, environmentID)
}

// DeleteTrustPolicy removes a policy. ErrNotFound when missing.
func (s *Store) DeleteTrustPolicy(ctx context.Context, id string) error {
	return s.exec(ctx, "delete trust policy", "trust policy", id, `DELETE FROM trust_policies WHERE id = $1`, id)
}

// trustAccessQuery reads, in one statement (one snapshot, one round
// trip: it runs on every request that carries an ID token), the
// environment, its workspace, the state's hold and the environment's
// policies, one row per policy (one row of NULL policy columns when it has
// none). $1 environment public id, $2 internal state name.
const trustAccessQuery = `SELECT e.public_id, e.slug, e.workspace_id, e.created_at, e.require_client_encryption,
	w.id, w.name, w.kind, w.lifecycle, w.created_at,
	coalesce((SELECT h.lifecycle FROM state_holds h WHERE h.name = $2), 'active'),
	coalesce(p.id, ''), coalesce(p.issuer, ''), coalesce(p.audience, ''), coalesce(p.claims, '{}'), coalesce(p.claim_globs, '{}'),
	coalesce(p.scope, ''), coalesce(p.state_pattern, ''), coalesce(p.max_ttl_ms, 0), p.created_at
FROM environments e
JOIN workspaces w ON w.id = e.workspace_id
LEFT JOIN trust_policies p ON p.environment_id = e.public_id
WHERE e.public_id = $1
ORDER BY p.id`

// TrustAccess reads the environment, its workspace, the state's hold and
// the environment's policies in one statement.
func (s *Store) TrustAccess(ctx context.Context, environmentID, state string) (*trust.Access, error) {
	a := &trust.Access{State: tenancy.LifecycleActive}
	rows, err := s.d.Pool().Query(ctx, trustAccessQuery, environmentID, state)
	err = EachRow(rows, err, func(r Rows) error {
		var (
			e             tenancy.Environment
			w             tenancy.Workspace
			p             trust.Policy
			claims, globs string
			ttl           int64
		)
		if err := r.Scan(&e.PublicID, &e.Slug, &e.WorkspaceID, &e.Created, &e.RequireClientEncryption,
			&w.ID, &w.Name, &w.Kind, &w.Lifecycle, &w.Created, &a.State,
			&p.ID, &p.Issuer, &p.Audience, &claims, &globs, &p.Scope, &p.StatePattern, &ttl, &p.Created); err != nil {
			return err
		}
		if a.Environment == nil {
			a.Environment, a.Workspace = &e, &w
		}
		if p.ID == "" {
			return nil
		}
		p.EnvironmentID = e.PublicID
		if err := decodePolicy(&p, claims, globs, ttl); err != nil {
			return err
		}
		a.Policies = append(a.Policies, p)
		return nil
	})
	if err != nil {
		return nil, s.d.Translate("trust access", err)
	}
	return a, nil
}

func claimsJSON(m map[string]string) (string, error) {
	if m == nil {
		m = map[string]string{}
	}
	b, err := json.Marshal(m)
	return string(b), err
}
