package history

import (
	"context"
	"time"

	"github.com/kilolock/kilolock"
)

// Tag is a name for one version of a state: a version reference wherever
// one is accepted (kl rollback NAME --to pre-migration).
type Tag struct {
	Name        string    `json:"name"`
	Version     int64     `json:"version"` // the version number it names
	Description string    `json:"description,omitempty"`
	Actor       string    `json:"actor"`
	Created     time.Time `json:"created"`
}

// MaxTagDescription bounds a tag's description.
const MaxTagDescription = 1024

// TagStore is the optional capability of a Store that keeps tags. Find it
// with a type assertion: s.(TagStore). Each change is written in one
// transaction with its audit entry, so a tag is never changed unaudited.
type TagStore interface {
	// PutTag makes tag name version t.Version of state: a new tag, or one
	// moved to another version. It sets t.Created (and audit.ID and At).
	// ErrNotFound when the state or the version does not exist.
	PutTag(ctx context.Context, state string, t *Tag, audit *kilolock.AuditEntry) error
	// DeleteTag removes a tag. ErrNotFound when the state has no such tag.
	DeleteTag(ctx context.Context, state, name string, audit *kilolock.AuditEntry) error
	// Tags lists a state's tags by name. ErrNotFound when the state does
	// not exist; an empty list when it has none.
	Tags(ctx context.Context, state string) ([]Tag, error)
	// TagVersion returns the version number tag name names. ErrNotFound
	// when the state or the tag does not exist.
	TagVersion(ctx context.Context, state, name string) (int64, error)
}

// tags returns the engine's store as a TagStore.
func tags(e *kilolock.Engine) (TagStore, error) {
	ts, ok := e.Store().(TagStore)
	if !ok {
		return nil, &kilolock.InvalidError{Code: "tags_unsupported", Message: "this store keeps no tags", Hint: "use the SQLite or PostgreSQL store"}
	}
	return ts, nil
}

// TagOptions say who sets or removes a tag, for its audit entry.
type TagOptions struct {
	By          kilolock.Caller
	Description string
}

// SetTag makes tag name version ref of a state (moving it when it names
// another version already), and audits it as tag.set on "STATE@TAG". An
// *InvalidError for a bad tag name or description; see ResolveVersion for
// ref. The tag is what ref resolves to now: a tag set to @latest keeps
// naming that version when later ones come.
func SetTag(ctx context.Context, e *kilolock.Engine, state, name string, ref kilolock.VersionRef, o TagOptions) (*Tag, error) {
	if err := kilolock.ValidTagName(name); err != nil {
		return nil, err
	}
	if err := kilolock.ValidText("description", o.Description, MaxTagDescription); err != nil {
		return nil, err
	}
	ts, err := tags(e)
	if err != nil {
		return nil, err
	}
	v, err := e.ResolveVersion(ctx, state, ref)
	if err != nil {
		return nil, err
	}
	t := &Tag{Name: name, Version: v.Number, Description: o.Description, Actor: o.By.Who()}
	if err := ts.PutTag(ctx, state, t, tagAudit(o.By, "tag.set", state, name)); err != nil {
		return nil, err
	}
	return t, nil
}

// UnsetTag removes a tag, audited as tag.unset on "STATE@TAG".
// ErrNotFound when the state has no such tag.
func UnsetTag(ctx context.Context, e *kilolock.Engine, state, name string, o TagOptions) error {
	if err := kilolock.ValidStateName(state); err != nil {
		return err
	}
	if err := kilolock.ValidTagName(name); err != nil {
		return err
	}
	ts, err := tags(e)
	if err != nil {
		return err
	}
	return ts.DeleteTag(ctx, state, name, tagAudit(o.By, "tag.unset", state, name))
}

// Tags lists a state's tags by name. ErrNotFound when the state does not
// exist.
func Tags(ctx context.Context, e *kilolock.Engine, state string) ([]Tag, error) {
	if err := kilolock.ValidStateName(state); err != nil {
		return nil, err
	}
	ts, err := tags(e)
	if err != nil {
		return nil, err
	}
	return ts.Tags(ctx, state)
}

// TagsByVersion is Tags keyed by the version number each names: what the
// web view's timeline shows. A store without tags gives an empty map.
func TagsByVersion(ctx context.Context, e *kilolock.Engine, state string) (map[int64][]string, error) {
	out := map[int64][]string{}
	if _, ok := e.Store().(TagStore); !ok {
		return out, nil
	}
	tags, err := Tags(ctx, e, state)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		out[t.Version] = append(out[t.Version], t.Name)
	}
	return out, nil
}

func tagAudit(by kilolock.Caller, action, state, name string) *kilolock.AuditEntry {
	return &kilolock.AuditEntry{Actor: by.Who(), Action: action, Target: state + "@" + name, From: by.From, RequestID: by.RequestID}
}
