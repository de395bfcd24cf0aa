package klcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/progress"
	"github.com/kilolock/kilolock/store"
)

// EngineBackend runs kl's commands in-process on a kilolock.Engine: the
// library API, no server involved.
type EngineBackend struct {
	// Actor is recorded on the versions kl makes; empty means "kl".
	Actor  string
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
func OpenEngineBackend(ctx context.Context, url string, opts ...store.Option) (*EngineBackend, error) {
	s, err := openStore(ctx, url, opts...)
	if err != nil {
		return nil, err
	}
	return &EngineBackend{engine: kilolock.NewEngine(s, kilolock.Options{}), owned: true}, nil
}

// openStore opens the store at url with opts, its error hinted for kl.
func openStore(ctx context.Context, url string, opts ...store.Option) (kilolock.Store, error) {
	s, err := store.Open(ctx, url, opts...)
	if err != nil {
		return nil, keyHint(fmt.Errorf("open database: %w", err),
			"--database (KL_DATABASE_URL) takes a postgres:// URL or the path of a SQLite file")
	}
	return s, nil
}

// keyHint is err with what to do: a *kilolock.KeyError's own hint, naming
// kl's flag for the keys, else hint (none when "").
func keyHint(err error, hint string) error {
	var ke *kilolock.KeyError
	switch {
	case errors.As(err, &ke):
		return withHint(err, ke.Hint+" (kl: --encryption-key-file)")
	case hint == "":
		return err
	}
	return withHint(err, hint)
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
func (b *EngineBackend) States(ctx context.Context) ([]kilolock.State, error) {
	sts, err := b.engine.Store().States(ctx)
	if err != nil {
		return nil, err
	}
	if sts == nil {
		sts = []kilolock.State{}
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
	if s.SharedPlanLocks != nil {
		if err := b.engine.SetSharedPlanLocks(ctx, name, s.SharedPlanLocks); err != nil {
			return stateError(name, err)
		}
	}
	if s.RequireClientEncryption != nil {
		if err := b.engine.SetRequireClientEncryption(ctx, name, *s.RequireClientEncryption); err != nil {
			return stateError(name, err)
		}
	}
	return nil
}

// Rejections implements Backend.
func (b *EngineBackend) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	rs, err := history.Rejections(ctx, b.engine, name, limit)
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

// sameAsServer gives v the shape the server's JSON would: masked values
// become their text, numbers json.Number, so that output does not depend
// on the backend.
func sameAsServer[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Show implements StateOps.
func (b *EngineBackend) Show(ctx context.Context, name string, ref kilolock.VersionRef) (*history.VersionView, error) {
	return sameAsServer(history.Show(ctx, b.engine, name, ref))
}

// ShowInstance implements StateOps.
func (b *EngineBackend) ShowInstance(ctx context.Context, name string, ref kilolock.VersionRef, address string) (*history.InstanceView, error) {
	return sameAsServer(history.ShowInstance(ctx, b.engine, name, ref, address))
}

// Diff implements StateOps.
func (b *EngineBackend) Diff(ctx context.Context, name string, from, to kilolock.VersionRef) (*history.StateDiff, error) {
	return sameAsServer(history.Diff(ctx, b.engine, name, from, to))
}

// AddressHistory implements StateOps.
func (b *EngineBackend) AddressHistory(ctx context.Context, name, address string) ([]history.AddressChange, error) {
	cs, err := history.AddressHistory(ctx, b.engine, name, address)
	if err != nil {
		return nil, stateError(name, err)
	}
	out, err := sameAsServer(&cs, nil)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// Rollback implements StateOps.
func (b *EngineBackend) Rollback(ctx context.Context, name string, r RollbackRequest) (*history.RollbackResult, error) {
	o := history.RollbackOptions{Actor: actorOr(b.Actor)}
	var (
		res *history.RollbackResult
		err error
	)
	switch {
	case !r.Apply:
		var plan *history.RollbackPlan
		if r.Address == "" {
			plan, err = history.PlanRollback(ctx, b.engine, name, r.To)
		} else {
			plan, err = history.PlanRollbackResource(ctx, b.engine, name, r.Address, r.To)
		}
		if plan != nil {
			res = &history.RollbackResult{Plan: *plan}
		}
	case r.Address == "":
		res, err = history.Rollback(ctx, b.engine, name, r.To, o)
	default:
		res, err = history.RollbackResource(ctx, b.engine, name, r.Address, r.To, o)
	}
	return sameAsServer(res, err)
}

// StateList implements StateOps.
func (b *EngineBackend) StateList(ctx context.Context, name, pattern string) ([]history.InstanceSummary, error) {
	list, err := history.StateList(ctx, b.engine, name, pattern)
	if err != nil {
		return nil, stateError(name, err)
	}
	if list == nil {
		list = []history.InstanceSummary{}
	}
	return list, nil
}

// StateRm implements StateOps.
func (b *EngineBackend) StateRm(ctx context.Context, name string, addresses []string, dryRun bool) (*history.StateOpResult, error) {
	return sameAsServer(history.StateRm(ctx, b.engine, name, addresses, history.StateOpOptions{Actor: actorOr(b.Actor), DryRun: dryRun}))
}

// StateMv implements StateOps.
func (b *EngineBackend) StateMv(ctx context.Context, name, from, to string, dryRun bool) (*history.StateOpResult, error) {
	return sameAsServer(history.StateMv(ctx, b.engine, name, from, to, history.StateOpOptions{Actor: actorOr(b.Actor), DryRun: dryRun}))
}

// Export implements StateOps.
func (b *EngineBackend) Export(ctx context.Context, name string, ref kilolock.VersionRef) ([]byte, error) {
	step := progress.From(ctx).Start("read and render "+name, 0, progress.Bytes)
	defer step.Done()
	data, err := history.Export(ctx, b.engine, name, ref)
	step.Add(int64(len(data)))
	return data, stateError(name, err)
}

// Import implements StateOps.
func (b *EngineBackend) Import(ctx context.Context, name string, data []byte, force bool) (*ImportResult, error) {
	step := progress.From(ctx).Start("parse and store "+name, 0, progress.Bytes)
	res, err := history.Import(ctx, b.engine, name, data, history.ImportOptions{Actor: actorOr(b.Actor), Force: force})
	step.Done()
	if err != nil {
		return nil, stateError(name, err)
	}
	return &ImportResult{Version: res.Version, Stats: res.Stats, Unchanged: res.Unchanged}, nil
}

// Cone implements GraphOps.
func (b *EngineBackend) Cone(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, dir history.Direction, depth int) (*history.ConeView, error) {
	v, err := history.Cone(ctx, b.engine, name, ref, addresses, dir, depth)
	return sameAsServer(v, stateError(name, err))
}

// Slice implements GraphOps.
func (b *EngineBackend) Slice(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, cone history.SliceCone) ([]byte, error) {
	d, err := history.Slice(ctx, b.engine, name, ref, addresses, cone)
	if err != nil {
		return nil, stateError(name, err)
	}
	return d.Bytes, nil
}
