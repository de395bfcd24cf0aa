package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

var _ history.TagStore = (*Store)(nil)

// insertAudit queues the audit entry of a change made in the same
// transaction.
func insertAudit(b *Batch, e *kilolock.AuditEntry) {
	if e.At.IsZero() {
		e.At = now()
	}
	b.Query(func(r Rows) error { return r.Scan(&e.ID) },
		`INSERT INTO audit_log (at, actor, action, target, remote, denied, reason, request_id)
		VALUES ($1, $2, $3, $4, $5, false, '', $6) RETURNING id`, e.At, e.Actor, e.Action, e.Target, e.From, e.RequestID)
}

// versionState returns the id of the state called name that has version
// number; ErrNotFound when it has none, or does not exist.
func versionState(ctx context.Context, tx Tx, name string, number int64) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT s.id FROM states s JOIN state_versions v ON v.state_id = s.id AND v.number = $2 WHERE s.name = $1`, name, number).Scan(&id)
	if errors.Is(err, ErrNoRows) {
		return 0, noVersion(ctx, tx, name, fmt.Sprintf("version %d", number))
	}
	return id, err
}

// PutTag creates or moves a tag, with its audit entry, in one transaction.
func (s *Store) PutTag(ctx context.Context, state string, t *history.Tag, audit *kilolock.AuditEntry) error {
	t.Created = now()
	return s.write(ctx, "put tag", func(tx Tx) error {
		stateID, err := versionState(ctx, tx, state, t.Version)
		if err != nil {
			return err
		}
		b := &Batch{}
		b.Exec(nil, `INSERT INTO state_tags (state_id, name, version, description, actor, created_at) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (state_id, name) DO UPDATE SET version = excluded.version, description = excluded.description,
				actor = excluded.actor, created_at = excluded.created_at`, stateID, t.Name, t.Version, t.Description, t.Actor, t.Created)
		insertAudit(b, audit)
		return tx.Send(ctx, b)
	})
}

// DeleteTag removes a tag, with its audit entry, in one transaction.
func (s *Store) DeleteTag(ctx context.Context, state, name string, audit *kilolock.AuditEntry) error {
	return s.write(ctx, "delete tag", func(tx Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM state_tags WHERE state_id = `+sqlStateID+` AND name = $2`, state, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return noVersion(ctx, tx, state, fmt.Sprintf("tag %q", name))
		}
		b := &Batch{}
		insertAudit(b, audit)
		return tx.Send(ctx, b)
	})
}

// Tags lists a state's tags by name, in byte order.
func (s *Store) Tags(ctx context.Context, state string) ([]history.Tag, error) {
	return ofState(ctx, s, "tags", state, func(r Rows, t *history.Tag) (bool, error) {
		return true, r.Scan(&t.Name, &t.Version, &t.Description, &t.Actor, &t.Created)
	}, `SELECT name, version, description, actor, created_at FROM state_tags WHERE state_id = `+sqlStateID+` ORDER BY name{C}`, state)
}

// TagVersion returns the version number a tag names.
func (s *Store) TagVersion(ctx context.Context, state, name string) (int64, error) {
	return readValue(ctx, s, "tag version", func(tx Tx) (n int64, err error) {
		err = tx.QueryRow(ctx, `SELECT version FROM state_tags WHERE state_id = `+sqlStateID+` AND name = $2`, state, name).Scan(&n)
		if errors.Is(err, ErrNoRows) {
			return 0, noVersion(ctx, tx, state, fmt.Sprintf("tag %q", name))
		}
		return n, err
	})
}
