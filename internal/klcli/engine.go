package klcli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

// EngineBackend runs kl's commands in-process on a kilolock.Engine: the
// library API, no server involved.
type EngineBackend struct {
	engine *kilolock.Engine
	owned  bool // Close closes the engine's store
}

var _ Backend = (*EngineBackend)(nil)

// NewEngineBackend returns a Backend on e. Close does not close e's store:
// it belongs to the caller.
func NewEngineBackend(e *kilolock.Engine) *EngineBackend {
	return &EngineBackend{engine: e}
}

// OpenEngineBackend opens the store at url (postgres://… or a SQLite file
// path, see store.Open) and returns a Backend on an Engine over it. Close
// closes the store.
func OpenEngineBackend(ctx context.Context, url string) (*EngineBackend, error) {
	s, err := store.Open(ctx, url)
	if err != nil {
		return nil, withHint(fmt.Errorf("open database: %w", err),
			"--database (KL_DATABASE_URL) takes a postgres:// URL or the path of a SQLite file")
	}
	return &EngineBackend{engine: kilolock.NewEngine(s, kilolock.Options{}), owned: true}, nil
}

// Status implements Backend.
func (b *EngineBackend) Status(ctx context.Context, name string) (*kilolock.Status, error) {
	s, err := b.engine.Status(ctx, name)
	return s, stateError(name, err)
}

// History implements Backend.
func (b *EngineBackend) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	vs, err := b.engine.History(ctx, name, opts)
	if err != nil {
		return nil, stateError(name, err)
	}
	if vs == nil {
		vs = []kilolock.Version{}
	}
	return vs, nil
}

// States implements Backend.
func (b *EngineBackend) States(ctx context.Context) ([]kilolock.StateInfo, error) {
	sts, err := b.engine.Store().States(ctx)
	if err != nil {
		return nil, err
	}
	if sts == nil {
		sts = []kilolock.StateInfo{}
	}
	return sts, nil
}

// Query implements Backend. Values are normalized as the server's JSON
// would carry them (text for bytes and times), so that output does not
// depend on the backend.
func (b *EngineBackend) Query(ctx context.Context, sql string) (*kilolock.QueryResult, error) {
	res, err := b.engine.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	for _, row := range res.Rows {
		for i, v := range row {
			row[i] = normalizeValue(v)
		}
	}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	if res.Rows == nil {
		res.Rows = [][]any{}
	}
	return res, nil
}

func normalizeValue(v any) any {
	switch v := v.(type) {
	case []byte:
		if utf8.Valid(v) {
			return string(v)
		}
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case json.RawMessage:
		return string(v)
	}
	return v
}

// ConfigureState implements Backend.
func (b *EngineBackend) ConfigureState(ctx context.Context, name string, s StateSettings) error {
	if s.ExclusiveLocks != nil {
		mode := kilolock.LockOptimistic
		if *s.ExclusiveLocks {
			mode = kilolock.LockExclusive
		}
		if err := b.engine.SetLockMode(ctx, name, mode); err != nil {
			return stateError(name, err)
		}
	}
	if s.AllowLineageChange != nil {
		if err := b.engine.SetAllowLineageChange(ctx, name, *s.AllowLineageChange); err != nil {
			return stateError(name, err)
		}
	}
	return nil
}

// Rejections implements Backend.
func (b *EngineBackend) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	rs, err := b.engine.Rejections(ctx, name, limit)
	if err != nil {
		return nil, stateError(name, err)
	}
	if rs == nil {
		rs = []kilolock.Rejection{}
	}
	return rs, nil
}

// ReadVersion implements Backend.
func (b *EngineBackend) ReadVersion(ctx context.Context, name string, number int64) ([]byte, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	d, err := b.engine.ReadVersion(ctx, name, number)
	if err != nil {
		return nil, stateError(name, err)
	}
	return d.Bytes, nil
}

// Close implements Backend.
func (b *EngineBackend) Close() error {
	if !b.owned {
		return nil
	}
	return b.engine.Store().Close()
}

// stateError names the state in a bare store error, so that in-process
// errors read like the server's.
func stateError(name string, err error) error {
	if err == nil || strings.Contains(err.Error(), name) {
		return err
	}
	return fmt.Errorf("state %q: %w", name, err)
}
