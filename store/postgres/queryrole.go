package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// Users' SQL runs as a login role of its own, never as the store's: a
// role that may read kilolock.QueryRelations and nothing else, so that no
// statement (COPY … TO PROGRAM, pg_read_file, lo_import, RESET ROLE,
// set_config('role', …)) can reach beyond them. Open makes it when the
// store's role may (a superuser, or CREATEROLE), with a random password
// kept in kl_settings, which only the store's role may read; every replica
// reads the same password.

// Keys of kl_settings.
const (
	settingQueryRole     = "query_role"
	settingQueryPassword = "query_role_password"
)

// queryRole is the login of users' queries that Open found or made.
type queryRole struct {
	name, password string
}

var simpleName = regexp.MustCompile(`^[a-z0-9_]{1,54}$`)

// roleName is prefix and DB (with _SCHEMA beyond public), or a hash of
// them when they are not plain lowercase names.
func roleName(prefix, db, schema string) string {
	name := db
	if schema != "public" {
		name += "_" + schema
	}
	if simpleName.MatchString(name) {
		return prefix + name
	}
	h := sha256.Sum256([]byte(db + "\x00" + schema))
	return prefix + hex.EncodeToString(h[:8])
}

// setUpQueryRole finds or makes the query role and grants it what it may
// read, in a savepoint of the migration's transaction. When that is not
// possible it returns the refusal Query answers with; nothing else fails.
func setUpQueryRole(ctx context.Context, tx sqlstore.Tx) (*queryRole, error) {
	return setUpRole(ctx, tx, roleKind{nameKey: settingQueryRole, passwordKey: settingQueryPassword, prefix: "kl_query_",
		grant: func(schema string) (string, []string) { return schema, kilolock.QueryRelations }})
}

// roleKind says which login setUpRole makes: where its name and password
// are kept, the prefix of its name, and (for the store's schema) the
// schema and relations it may read.
type roleKind struct {
	nameKey, passwordKey, prefix string
	grant                        func(schema string) (readSchema string, relations []string)
	// prepare runs in the savepoint before the grants: it makes what
	// the role reads.
	prepare func(ctx context.Context, tx sqlstore.Tx, schema string) error
	// after runs in the savepoint once the role has its grants.
	after func(ctx context.Context, tx sqlstore.Tx, role *queryRole, schema string) error
}

// setUpRole finds or makes the login of kind and grants it what it may
// read, in a savepoint of the migration's transaction. When that is not
// possible it returns the refusal its queries answer with; nothing else
// fails.
func setUpRole(ctx context.Context, tx sqlstore.Tx, kind roleKind) (*queryRole, error) {
	var (
		db, schema, user string
		manage           bool
		role             queryRole
	)
	err := tx.QueryRow(ctx, `SELECT current_database(), current_schema(), current_user, r.rolsuper OR r.rolcreaterole,
			coalesce((SELECT value FROM kl_settings WHERE name = $1), ''), coalesce((SELECT value FROM kl_settings WHERE name = $2), '')
		FROM pg_roles r WHERE r.rolname = current_user`, kind.nameKey, kind.passwordKey).
		Scan(&db, &schema, &user, &manage, &role.name, &role.password)
	if err != nil {
		return nil, err
	}
	if role.name == "" {
		role.name = roleName(kind.prefix, db, schema)
	}
	if _, err := tx.Exec(ctx, `SAVEPOINT kl_query_role`); err != nil {
		return nil, err
	}
	readSchema, relations := kind.grant(schema)
	if kind.prepare != nil {
		err = kind.prepare(ctx, tx, schema)
	}
	if err == nil {
		err = grantQueryRole(ctx, tx, &role, manage, readSchema, user, kind, relations)
	}
	if err == nil && kind.after != nil {
		err = kind.after(ctx, tx, &role, schema)
	}
	if err != nil {
		var refused *kilolock.RefusedError
		if !errors.As(err, &refused) {
			refused = roleUnavailable(role.name, user, "setting it up failed: "+err.Error())
		}
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT kl_query_role`); err != nil {
			return nil, err
		}
		return nil, refused
	}
	_, err = tx.Exec(ctx, `RELEASE SAVEPOINT kl_query_role`)
	return &role, err
}

// grantQueryRole makes role (when missing, or without a known password)
// and grants it what it lacks of USAGE on the schema and SELECT on the
// relations users may query.
func grantQueryRole(ctx context.Context, tx sqlstore.Tx, role *queryRole, manage bool, schema, user string, kind roleKind, relations []string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role.name).Scan(&exists); err != nil {
		return err
	}
	ident := pgx.Identifier{role.name}.Sanitize()
	if !exists || role.password == "" {
		if !manage {
			return roleUnavailable(role.name, user, "the store's role may not create roles")
		}
		role.password = rand.Text()
		verb := "ALTER"
		if !exists {
			verb = "CREATE"
		}
		// A SCRAM verifier, so that the password itself is in no log.
		if _, err := tx.Exec(ctx, verb+` ROLE `+ident+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD '`+scramVerifier(role.password)+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO kl_settings (name, value) VALUES ($1, $2), ($3, $4)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
			kind.nameKey, role.name, kind.passwordKey, role.password); err != nil {
			return err
		}
	}
	var grants []string
	var usage bool
	if err := tx.QueryRow(ctx, `SELECT has_schema_privilege($1, $2, 'USAGE')`, role.name, schema).Scan(&usage); err != nil {
		return err
	}
	if !usage {
		grants = append(grants, `GRANT USAGE ON SCHEMA `+pgx.Identifier{schema}.Sanitize()+` TO `+ident)
	}
	var missing []string
	qualified := make([]string, len(relations))
	for i, r := range relations {
		qualified[i] = pgx.Identifier{schema, r}.Sanitize()
	}
	rows, err := tx.Query(ctx, `SELECT r FROM unnest($2::text[]) r WHERE NOT has_table_privilege($1, r, 'SELECT')`, role.name, qualified)
	if err := sqlstore.EachRow(rows, err, func(r sqlstore.Rows) error {
		var rel string
		err := r.Scan(&rel)
		missing = append(missing, rel)
		return err
	}); err != nil {
		return err
	}
	if len(missing) > 0 {
		grants = append(grants, `GRANT SELECT ON `+strings.Join(missing, ", ")+` TO `+ident)
	}
	for _, g := range grants {
		if _, err := tx.Exec(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// scramVerifier is what PostgreSQL stores for password with
// SCRAM-SHA-256 (RFC 5802, RFC 7677), as its own clients compute it.
func scramVerifier(password string) string {
	const iterations = 4096
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, _ := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key")))
}

func roleUnavailable(role, user, why string) *kilolock.RefusedError {
	return &kilolock.RefusedError{
		Code:    "query_role_unavailable",
		Message: fmt.Sprintf("queries are off: users' SQL runs only as the query role %s, which %s", role, why),
		Hint: fmt.Sprintf("let the store's role %s create it once (ALTER ROLE %s CREATEROLE, then restart kld), "+
			"or give kld a URL of a role that may read only the views: kld --query-database-url", user, user),
	}
}

// checkQuerySession refuses a query connection whose role could reach
// beyond the views: a superuser, a member of the roles that read or write
// server files or run programs, or a role that may read the table tokens.
func checkQuerySession(ctx context.Context, conn *pgx.Conn) error {
	var (
		role               string
		super, files, base bool
	)
	err := conn.QueryRow(ctx, `SELECT session_user, r.rolsuper,
			EXISTS (SELECT 1 FROM pg_roles g WHERE g.rolname IN ('pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program')
				AND pg_has_role(session_user, g.oid, 'MEMBER')),
			coalesce(has_table_privilege(to_regclass('tokens'), 'SELECT'), false)
		FROM pg_roles r WHERE r.rolname = session_user`).Scan(&role, &super, &files, &base)
	if err != nil {
		return err
	}
	why := ""
	switch {
	case super:
		why = "is a superuser"
	case files:
		why = "may read or write server files or run programs"
	case base:
		why = "may read the store's tables (tokens)"
	default:
		return nil
	}
	return &kilolock.RefusedError{
		Code:    "query_role_unsafe",
		Message: fmt.Sprintf("queries are off: the query connection's role %s %s, so users' SQL could reach beyond the views", role, why),
		Hint:    "give users' queries a role that may read only the views (kld --query-database-url), or leave the URL out and let kld make its own (kl_query_…)",
	}
}

// acquireError translates a failure to get a query connection: a refused
// login of the query role is a refusal, not an outage.
func (s *Store) acquireError(err error) error {
	var (
		refused *kilolock.RefusedError
		pe      *pgconn.PgError
	)
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28"): // invalid authorization
		return &kilolock.RefusedError{
			Code:    "query_role_unavailable",
			Message: "queries are off: the server refused the query role's login: " + pe.Message,
			Hint:    "allow password login for the query role in pg_hba.conf (e.g. host DB kl_query_… 10.0.0.0/8 scram-sha-256), or give kld another URL for queries: kld --query-database-url",
		}
	}
	return translate(err)
}

// queryPoolConfig is the pool of users' queries: the URL WithQueryURL
// named, or the store's own with the query role's login.
func queryPoolConfig(cfg *pgxpool.Config, queryURL string, role *queryRole) (*pgxpool.Config, error) {
	qcfg := cfg.Copy()
	if queryURL != "" {
		var err error
		if qcfg, err = pgxpool.ParseConfig(queryURL); err != nil {
			return nil, parseError(err)
		}
	} else {
		qcfg.ConnConfig.User, qcfg.ConnConfig.Password = role.name, role.password
	}
	// Users' statements are one-offs: no statement cache, whose prepared
	// statements a user's DEALLOCATE could pull from under it, and a
	// DISCARD ALL after each (see Query).
	qcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	qcfg.ConnConfig.StatementCacheCapacity = 0
	qcfg.ConnConfig.DescriptionCacheCapacity = 0
	qcfg.MaxConns = 4
	qcfg.AfterConnect = checkQuerySession
	return qcfg, nil
}
