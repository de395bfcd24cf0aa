package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// list runs one query in a read transaction, scan making an item of each
// row; never nil. A transaction run again starts the list again.
func list[T any](ctx context.Context, s *Store, op string, scan func(Rows, *T) error, sql string, args ...any) ([]T, error) {
	out := []T{}
	err := s.read(ctx, op, func(tx Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, sql, args...)
		return EachRow(rows, err, func(r Rows) error {
			var x T
			err := scan(r, &x)
			out = append(out, x)
			return err
		})
	})
	return out, err
}

// one is list's first item; ErrNotFound, naming what and id, when none.
func one[T any](ctx context.Context, s *Store, op, what, id string, scan func(Rows, *T) error, sql string, args ...any) (*T, error) {
	xs, err := list(ctx, s, op, scan, sql, args...)
	if err == nil && len(xs) == 0 {
		err = missing(what, id)
	}
	if err != nil {
		return nil, err
	}
	return &xs[0], nil
}

// exec runs one statement in a write transaction; with what, a statement
// that affects no row is ErrNotFound naming what and id.
func (s *Store) exec(ctx context.Context, op, what, id, sql string, args ...any) error {
	return s.write(ctx, op, func(tx Tx) error {
		n, err := tx.Exec(ctx, sql, args...)
		if err == nil && n == 0 && what != "" {
			return missing(what, id)
		}
		return err
	})
}

// require runs a one-row existence check of the record id: ErrNotFound
// when it finds none.
func require(ctx context.Context, tx Tx, what, id, query string) error {
	var one int
	err := tx.QueryRow(ctx, query, id).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return missing(what, id)
	}
	return err
}

// CreateWorkspace stores w, active, created now. ErrConflict when its id is
// taken.
func (s *Store) CreateWorkspace(ctx context.Context, w *tenancy.Workspace) error {
	w.Lifecycle, w.Created = tenancy.LifecycleActive, now()
	return s.exec(ctx, "create workspace", "", "", `INSERT INTO workspaces (id, name, kind, lifecycle, created_at) VALUES ($1, $2, $3, $4, $5)`,
		w.ID, w.Name, string(w.Kind), string(w.Lifecycle), w.Created)
}

const workspaceSelect = `SELECT id, name, kind, lifecycle, created_at FROM workspaces`

func scanWorkspace(r Rows, w *tenancy.Workspace) error {
	return r.Scan(&w.ID, &w.Name, &w.Kind, &w.Lifecycle, &w.Created)
}

// Workspace returns one workspace. ErrNotFound when missing.
func (s *Store) Workspace(ctx context.Context, id string) (*tenancy.Workspace, error) {
	return one(ctx, s, "workspace", "workspace", id, scanWorkspace, workspaceSelect+` WHERE id = $1`, id)
}

// Workspaces lists every workspace by id.
func (s *Store) Workspaces(ctx context.Context) ([]tenancy.Workspace, error) {
	return list(ctx, s, "workspaces", scanWorkspace, workspaceSelect+` ORDER BY id`)
}

// SetWorkspaceLifecycle suspends or resumes a workspace. ErrNotFound when
// missing.
func (s *Store) SetWorkspaceLifecycle(ctx context.Context, id string, l tenancy.Lifecycle) error {
	return s.exec(ctx, "set workspace lifecycle", "workspace", id, `UPDATE workspaces SET lifecycle = $2 WHERE id = $1`, id, string(l))
}

// CreateEnvironment stores e. ErrNotFound when its workspace is missing;
// ErrConflict when the slug or public id is taken.
func (s *Store) CreateEnvironment(ctx context.Context, e *tenancy.Environment) error {
	e.Created = now()
	return s.write(ctx, "create environment", func(tx Tx) error {
		if err := require(ctx, tx, "workspace", e.WorkspaceID, `SELECT 1 FROM workspaces WHERE id = $1`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO environments (public_id, slug, workspace_id, created_at) VALUES ($1, $2, $3, $4)`,
			e.PublicID, e.Slug, e.WorkspaceID, e.Created)
		return err
	})
}

const environmentSelect = `SELECT public_id, slug, workspace_id, created_at, require_client_encryption FROM environments`

func scanEnvironment(r Rows, e *tenancy.Environment) error {
	return r.Scan(&e.PublicID, &e.Slug, &e.WorkspaceID, &e.Created, &e.RequireClientEncryption)
}

// Environment returns one environment. ErrNotFound when missing.
func (s *Store) Environment(ctx context.Context, publicID string) (*tenancy.Environment, error) {
	return one(ctx, s, "environment", "environment", publicID, scanEnvironment, environmentSelect+` WHERE public_id = $1`, publicID)
}

// Environments lists a workspace's environments by slug.
func (s *Store) Environments(ctx context.Context, workspaceID string) ([]tenancy.Environment, error) {
	return list(ctx, s, "environments", scanEnvironment, environmentSelect+` WHERE workspace_id = $1 ORDER BY slug`, workspaceID)
}

// SetEnvironmentRequireClientEncryption sets whether every state of the
// environment takes only client-side encrypted writes. ErrNotFound when
// the environment is missing.
func (s *Store) SetEnvironmentRequireClientEncryption(ctx context.Context, publicID string, require bool) error {
	return s.exec(ctx, "set environment require client encryption", "environment", publicID,
		`UPDATE environments SET require_client_encryption = $2 WHERE public_id = $1`, publicID, require)
}

// PutMember adds a member or changes its role. ErrNotFound when the
// workspace is missing.
func (s *Store) PutMember(ctx context.Context, workspaceID string, m tenancy.Member) error {
	return s.write(ctx, "put member", func(tx Tx) error {
		if err := require(ctx, tx, "workspace", workspaceID, `SELECT 1 FROM workspaces WHERE id = $1`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role) VALUES ($1, $2, $3)
			ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role`, workspaceID, m.UserID, string(m.Role))
		return err
	})
}

// RemoveMember removes a member. ErrNotFound when not a member.
func (s *Store) RemoveMember(ctx context.Context, workspaceID, userID string) error {
	return s.exec(ctx, "remove member", "member", userID, `DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID)
}

// Members lists a workspace's members by user id.
func (s *Store) Members(ctx context.Context, workspaceID string) ([]tenancy.Member, error) {
	return list(ctx, s, "members", func(r Rows, m *tenancy.Member) error { return r.Scan(&m.UserID, &m.Role) },
		`SELECT user_id, role FROM workspace_members WHERE workspace_id = $1 ORDER BY user_id`, workspaceID)
}

// CreateToken stores t. ErrNotFound when an automation token's environment
// is missing; ErrConflict when its id or hash is taken.
func (s *Store) CreateToken(ctx context.Context, t *tenancy.Token) error {
	t.Created = now()
	var env, expires any
	if t.EnvironmentID != "" {
		env = t.EnvironmentID
	}
	if !t.Expires.IsZero() {
		t.Expires = t.Expires.UTC().Truncate(time.Microsecond)
		expires = t.Expires
	}
	return s.write(ctx, "create token", func(tx Tx) error {
		if env != nil {
			if err := require(ctx, tx, "environment", t.EnvironmentID, `SELECT 1 FROM environments WHERE public_id = $1`); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO tokens (id, kind, name, secret_hash, environment_id, scope, user_id, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, t.ID, string(t.Kind), t.Name, t.Hash.String(), env, string(t.Scope), t.UserID, t.Created, expires)
		return err
	})
}

const tokenSelect = `SELECT id, kind, name, secret_hash, coalesce(environment_id, ''), scope, user_id, created_at, last_used_at, expires_at FROM tokens`

func scanToken(r Rows, t *tenancy.Token) error {
	var hash string
	if err := r.Scan(&t.ID, &t.Kind, &t.Name, &hash, &t.EnvironmentID, &t.Scope, &t.UserID, &t.Created, &t.LastUsed, &t.Expires); err != nil {
		return err
	}
	var err error
	t.Hash, err = tenancy.ParseTokenHash(hash)
	return err
}

// TokenByHash finds a token by the hash of its secret, comparing the stored
// hash in constant time. ErrNotFound when no token has it.
func (s *Store) TokenByHash(ctx context.Context, h tenancy.TokenHash) (*tenancy.Token, error) {
	t, err := one(ctx, s, "token by hash", "token", "", scanToken, tokenSelect+` WHERE secret_hash = $1`, h.String())
	if err == nil && !t.Hash.Equal(h) {
		return nil, fmt.Errorf("token: %w", kilolock.ErrNotFound)
	}
	return t, err
}

// Tokens lists tokens of kind (every kind when empty) by id.
func (s *Store) Tokens(ctx context.Context, kind tenancy.TokenKind) ([]tenancy.Token, error) {
	return list(ctx, s, "tokens", scanToken, tokenSelect+` WHERE $1 = '' OR kind = $1 ORDER BY id`, string(kind))
}

// DeleteToken revokes a token and its grants. ErrNotFound when missing.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	return s.exec(ctx, "delete token", "token", id, `DELETE FROM tokens WHERE id = $1`, id)
}

// TouchToken sets a token's last-used time; a missing token is no error.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	return s.exec(ctx, "touch token", "", "", `UPDATE tokens SET last_used_at = $2 WHERE id = $1`, id, at.UTC().Truncate(time.Microsecond))
}

// PutGrant gives a personal token access to an environment. ErrNotFound
// when either is missing, ErrInvalid for a token that is not personal.
func (s *Store) PutGrant(ctx context.Context, g *tenancy.Grant) error {
	g.Created = now()
	return s.write(ctx, "put grant", func(tx Tx) error {
		var kind string
		err := tx.QueryRow(ctx, `SELECT kind FROM tokens WHERE id = $1`, g.TokenID).Scan(&kind)
		if errors.Is(err, ErrNoRows) {
			return missing("token", g.TokenID)
		} else if err != nil {
			return err
		}
		if tenancy.TokenKind(kind) != tenancy.TokenPersonal {
			return &kilolock.InvalidError{Code: "not_personal_token", Message: fmt.Sprintf("token %s is not a personal access token (its kind is %s)", g.TokenID, kind), Hint: "grants are for personal access tokens (klp_)"}
		}
		if err := require(ctx, tx, "environment", g.EnvironmentID, `SELECT 1 FROM environments WHERE public_id = $1`); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO token_grants (token_id, environment_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (token_id, environment_id) DO NOTHING`, g.TokenID, g.EnvironmentID, g.Created)
		return err
	})
}

// DeleteGrant revokes a grant. ErrNotFound when missing.
func (s *Store) DeleteGrant(ctx context.Context, tokenID, environmentID string) error {
	return s.exec(ctx, "delete grant", "grant", tokenID+" -> "+environmentID,
		`DELETE FROM token_grants WHERE token_id = $1 AND environment_id = $2`, tokenID, environmentID)
}

// Grants lists a token's grants (every grant when tokenID is empty).
func (s *Store) Grants(ctx context.Context, tokenID string) ([]tenancy.Grant, error) {
	return list(ctx, s, "grants", func(r Rows, g *tenancy.Grant) error { return r.Scan(&g.TokenID, &g.EnvironmentID, &g.Created) },
		`SELECT token_id, environment_id, created_at FROM token_grants WHERE $1 = '' OR token_id = $1 ORDER BY token_id, environment_id`, tokenID)
}

// SetStateLifecycle archives or restores a state by its internal name. A
// restore is counted as a commit is: the environment's row locked first
// when a limit applies to it, so that a restore and commits to other
// states of the environment count one after the other, and refused (a
// *kilolock.QuotaError) when the state's managed instances would grow
// the environment past its hard limit.
func (s *Store) SetStateLifecycle(ctx context.Context, name string, l tenancy.Lifecycle) error {
	return s.write(ctx, "set state lifecycle", func(tx Tx) error {
		if l == tenancy.LifecycleActive {
			b := &Batch{}
			f := queueQuotaFacts(b, name, nil, true)
			b.Query(func(r Rows) error { return r.Scan(&f.Managed) }, sqlStateManaged, name)
			if err := tx.Send(ctx, b); err != nil {
				return err
			}
			if err := kilolock.CheckRestore(name, f.CountRestore()); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO state_holds (name, lifecycle) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET lifecycle = excluded.lifecycle`, name, string(l))
		return err
	})
}

// StateLifecycle returns a state's lifecycle, active when none was set.
func (s *Store) StateLifecycle(ctx context.Context, name string) (tenancy.Lifecycle, error) {
	ls, err := list(ctx, s, "state lifecycle", func(r Rows, l *tenancy.Lifecycle) error { return r.Scan(l) },
		`SELECT lifecycle FROM state_holds WHERE name = $1`, name)
	if err != nil || len(ls) == 0 {
		return tenancy.LifecycleActive, err
	}
	return ls[0], nil
}

// AppendAudit stores e, setting its ID and, when zero, its time.
func (s *Store) AppendAudit(ctx context.Context, e *kilolock.AuditEntry) error {
	if e.At.IsZero() {
		e.At = now()
	}
	e.At = e.At.UTC().Truncate(time.Microsecond)
	return s.write(ctx, "append audit", func(tx Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO audit_log (at, actor, action, target, remote, denied, reason, request_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, e.At, e.Actor, e.Action, e.Target, e.From, e.Denied, e.Reason, e.RequestID).Scan(&e.ID)
	})
}

// Audit lists entries newest first.
func (s *Store) Audit(ctx context.Context, f kilolock.AuditFilter) ([]kilolock.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	return list(ctx, s, "audit", func(r Rows, e *kilolock.AuditEntry) error {
		return r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &e.From, &e.Denied, &e.Reason, &e.RequestID)
	}, `SELECT id, at, actor, action, target, remote, denied, reason, request_id FROM audit_log
		WHERE NOT $1 OR denied ORDER BY id DESC LIMIT $2`, f.DeniedOnly, f.Limit)
}

// accessQuery reads everything the authenticated lane decides on in one
// statement: the token, the path's workspace, its environment by public id
// or else by slug, an automation token's own environment, membership,
// grant, and the state's hold. $1 hash, $2 workspace id, $3 environment
// segment, $4 internal state name.
const accessQuery = `SELECT t.secret_hash, t.id, t.kind, t.name, coalesce(t.environment_id, ''), t.scope, t.user_id, t.created_at, t.last_used_at, t.expires_at,
	coalesce(w.id, ''), coalesce(w.name, ''), coalesce(w.kind, ''), coalesce(w.lifecycle, ''), w.created_at,
	coalesce(e.public_id, ''), coalesce(e.slug, ''), e.created_at,
	coalesce(h.public_id, ''), coalesce(h.slug, ''), coalesce(h.workspace_id, ''), h.created_at,
	t.kind = 'personal' AND EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = t.user_id),
	EXISTS (SELECT 1 FROM token_grants g WHERE g.token_id = t.id AND g.environment_id = e.public_id),
	coalesce((SELECT s.lifecycle FROM state_holds s WHERE s.name = $4), 'active')
FROM tokens t
LEFT JOIN workspaces w ON w.id = $2
LEFT JOIN environments e ON e.workspace_id = w.id AND e.public_id = coalesce(
	(SELECT p.public_id FROM environments p WHERE p.workspace_id = $2 AND p.public_id = $3),
	(SELECT b.public_id FROM environments b WHERE b.workspace_id = $2 AND b.slug = $3))
LEFT JOIN environments h ON h.public_id = t.environment_id
WHERE t.secret_hash = $1`

// Access reads, in one statement and one round trip, what the
// authenticated lane decides req on. An unknown hash gives a nil Token.
func (s *Store) Access(ctx context.Context, req tenancy.AccessRequest) (*tenancy.Access, error) {
	var (
		a    tenancy.Access
		t    tenancy.Token
		w    tenancy.Workspace
		e, h tenancy.Environment
		hash string
	)
	err := s.d.Pool().QueryRow(ctx, accessQuery, req.Hash.String(), req.WorkspaceID, req.Environment, req.StateName).Scan(&hash,
		&t.ID, &t.Kind, &t.Name, &t.EnvironmentID, &t.Scope, &t.UserID, &t.Created, &t.LastUsed, &t.Expires,
		&w.ID, &w.Name, &w.Kind, &w.Lifecycle, &w.Created,
		&e.PublicID, &e.Slug, &e.Created,
		&h.PublicID, &h.Slug, &h.WorkspaceID, &h.Created,
		&a.Member, &a.Granted, &a.State)
	if errors.Is(err, ErrNoRows) {
		return &tenancy.Access{State: tenancy.LifecycleActive}, nil
	} else if err != nil {
		return nil, s.d.Translate("access", err)
	}
	// The index found the row; the stored hash is compared again in
	// constant time, as TokenByHash does.
	if t.Hash, err = tenancy.ParseTokenHash(hash); err != nil {
		return nil, err
	}
	if !t.Hash.Equal(req.Hash) {
		return &tenancy.Access{State: tenancy.LifecycleActive}, nil
	}
	a.Token = &t
	if w.ID != "" {
		a.Workspace = &w
	}
	if e.PublicID != "" {
		e.WorkspaceID = w.ID
		a.Environment = &e
	}
	if h.PublicID != "" {
		a.Home = &h
	}
	return &a, nil
}
