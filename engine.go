package kilolock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/quota"
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// Logger receives one line per notable event (forced unlocks, refused
	// commits). Nil discards. Logged values carry what clients sent (a
	// lock's Who, a lineage); httpbackend.NewLogger keeps each entry on one
	// line whatever they hold.
	Logger *log.Logger
	// DefaultLockMode is the lock mode of states created by a first LOCK or
	// write. Empty means LockExclusive.
	DefaultLockMode LockMode
	// CacheBytes bounds what is kept of current versions between
	// requests: their indexes (lean graphs, packed), their bytes and
	// compressed copies (in spool files when large, in memory when small)
	// and, once a reader asked, their whole graphs and dependency
	// indexes. Past it, documents go before indexes (see docCache). Zero
	// means DefaultCacheBytes.
	CacheBytes int64
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// QueryLimits bound every Query (zero fields mean their defaults).
	QueryLimits QueryLimits
	// MaxLockHolders caps the holders of one optimistic state (see
	// LockOptions.MaxHolders: 0 means DefaultMaxLockHolders, negative no
	// cap).
	MaxLockHolders int
	// ClassicPlanLocks makes plans take write locks, as Terraform does,
	// on states that do not choose for themselves (State.
	// SharedPlanLocks). By default a plan's lock is a shared read lock,
	// granted beside an apply and other plans.
	ClassicPlanLocks bool
	// DefaultStateQuota is the limit of a state that sets none and whose
	// workspace sets none (kld --default-state-quota); nil for none.
	DefaultStateQuota *quota.Limit
	// SpoolDir is where large documents are kept in files rather than in
	// memory (see SpoolFile): request bodies as they arrive, the bytes of
	// current versions and their compressed copies, the objects of a
	// version being loaded. Empty means os.TempDir(). On a tmpfs the files
	// take memory after all: point it at a disk.
	SpoolDir string
}

// Engine ties a Store to the state model: it parses what clients write,
// turns it into changes against the current version, commits them and serves
// versions back byte for byte. It is safe for concurrent use, and several
// Engines (in several processes) may share one database: every decision that
// must be atomic is taken by the Store inside a transaction, and the Engine's
// cache is only ever trusted after the Store confirms it is current.
type Engine struct {
	store   Store
	log     *log.Logger
	mode    LockMode
	now     func() time.Time
	cache   *docCache
	limits  QueryLimits
	holders int
	// sharedPlans is the default of State.SharedPlanLocks.
	sharedPlans bool
	// defaultQuota is Options.DefaultStateQuota.
	defaultQuota *quota.Limit
	// spoolDir is Options.SpoolDir ("" for os.TempDir()).
	spoolDir string
	// writers queues this process's writes to one state (name →
	// *sync.Mutex), so concurrent writers commit one after another instead
	// of recomputing against each other; across processes the store's
	// parent check still decides.
	writers sync.Map
	// seen keeps, by state name, what this engine's last exclusive lock
	// on the state saw (*seenLock, see LockOptions.Seen): the holder's
	// next write takes the state from it rather than reading it again.
	seen sync.Map
}

// seenLock is the state as an exclusive lock this engine took left it.
type seenLock struct {
	lock  Lock
	state State
}

// NewEngine returns an Engine on s.
func NewEngine(s Store, o Options) *Engine {
	e := &Engine{store: s, log: o.Logger, mode: o.DefaultLockMode, now: o.Now, limits: o.QueryLimits, holders: o.MaxLockHolders, sharedPlans: !o.ClassicPlanLocks, defaultQuota: o.DefaultStateQuota, spoolDir: o.SpoolDir}
	if e.log == nil {
		e.log = log.New(discard{})
	}
	if e.mode == "" {
		e.mode = LockExclusive
	}
	if e.now == nil {
		e.now = time.Now
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	e.cache = newDocCache(o.CacheBytes)
	return e
}

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.store }

// Logger returns the engine's logger (Options.Logger).
func (e *Engine) Logger() *log.Logger { return e.log }

// Now returns the time on the engine's clock (Options.Now).
func (e *Engine) Now() time.Time { return e.now() }

// QueryLimits returns the bounds of every query (Options.QueryLimits).
func (e *Engine) QueryLimits() QueryLimits { return e.limits }

// DefaultLockMode returns the lock mode given to new states.
func (e *Engine) DefaultLockMode() LockMode { return e.mode }

// Read returns the current version of a state as the bytes a client wrote
// (or, for a version the server made, as Terraform would write it), in
// memory. ErrNotFound when the state does not exist or has no version yet.
func (e *Engine) Read(ctx context.Context, name string) (*Document, error) {
	return documentOf(e.Open(ctx, name))
}

// ReadVersion returns a version of a state by number, like Read.
func (e *Engine) ReadVersion(ctx context.Context, name string, number int64) (*Document, error) {
	return documentOf(e.OpenVersion(ctx, name, number))
}

func documentOf(b *Body, err error) (*Document, error) {
	if err != nil {
		return nil, err
	}
	data, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	return &Document{Version: b.Version, Bytes: data}, nil
}

// Open returns the current version of a state to serve: the bytes Read
// returns, written to each reader without being held in memory (see Body).
// ErrNotFound when the state does not exist or has no version yet.
func (e *Engine) Open(ctx context.Context, name string) (*Body, error) {
	ent, err := e.currentEntry(ctx, name)
	if err != nil {
		return nil, err
	}
	return ent.body, nil
}

// OpenVersion returns a version of a state by number, like Open. A
// *VersionNotFoundError when there is no such version.
func (e *Engine) OpenVersion(ctx context.Context, name string, number int64) (*Body, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	snap, err := e.store.Snapshot(ctx, name, number)
	if errors.Is(err, ErrNotFound) {
		// Say why: the valid range, and who pruned it if retention did.
		if _, rerr := e.ResolveVersion(ctx, name, VersionRef{Kind: RefNumber, N: uint64(number)}); rerr != nil {
			return nil, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	b, _, err := e.bodyOf(snap)
	return b, err
}

// current returns the current body and, unless the state is opaque, its
// whole graph, from the cache when the store confirms it is still current.
func (e *Engine) current(ctx context.Context, name string) (*Body, *graph.State, error) {
	ent, err := e.currentEntry(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	g, err := e.fullGraph(ctx, ent)
	return ent.body, g, err
}

// currentEntry is current's cache entry, with its document.
func (e *Engine) currentEntry(ctx context.Context, name string) (*cacheEntry, error) {
	return e.currentOf(ctx, name, true)
}

// currentOf is currentEntry for a caller that needs the version's
// document (needBody) or only its index.
func (e *Engine) currentOf(ctx context.Context, name string, needBody bool) (*cacheEntry, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	// The hot path of every GET: one cheap read proves the cached copy is
	// still current, even when other processes write to the same database.
	id, number, err := e.store.CurrentVersion(ctx, name)
	if err != nil {
		return nil, err
	}
	if number == 0 {
		return nil, fmt.Errorf("state %q has no version yet: %w", name, ErrNotFound)
	}
	if c := e.cache.lookup(name, id, needBody); c != nil {
		return c, nil
	}
	st, err := e.store.State(ctx, name)
	if err != nil {
		return nil, err
	}
	return e.storedEntry(ctx, st, needBody)
}

// load returns st's current body and, unless the state is opaque, its
// whole graph.
func (e *Engine) load(ctx context.Context, st *State) (*Body, *graph.State, error) {
	ent, err := e.loadEntry(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	g, err := e.fullGraph(ctx, ent)
	return ent.body, g, err
}

// loadEntry returns the cache entry of st's current version with its
// document, loading it from the store when it is not cached: its bytes
// are kept from then on (rendered once), and its graph made lean (see
// cacheEntry).
func (e *Engine) loadEntry(ctx context.Context, st *State) (*cacheEntry, error) {
	return e.entry(ctx, st, true)
}

// indexEntry is loadEntry for a caller that needs only the version's
// index (a write, Status): an entry whose document the cache let go will
// do.
func (e *Engine) indexEntry(ctx context.Context, st *State) (*cacheEntry, error) {
	return e.entry(ctx, st, false)
}

func (e *Engine) entry(ctx context.Context, st *State, needBody bool) (*cacheEntry, error) {
	if st.Current == 0 {
		return nil, fmt.Errorf("state %q has no version yet: %w", st.Name, ErrNotFound)
	}
	if c := e.cache.lookup(st.Name, st.CurrentID, needBody); c != nil {
		return c, nil
	}
	return e.storedEntry(ctx, st, needBody)
}

// storedEntry is the entry of st's current version after a miss: loaded
// from the store, unless another request of this process cached it since.
func (e *Engine) storedEntry(ctx context.Context, st *State, needBody bool) (*cacheEntry, error) {
	if st.Current == 0 {
		return nil, fmt.Errorf("state %q has no version yet: %w", st.Name, ErrNotFound)
	}
	if c := e.cache.peek(st.Name, st.CurrentID, needBody); c != nil {
		return c, nil
	}
	if ss, ok := e.store.(SnapshotStreamer); ok {
		if ent, err := e.streamEntry(ctx, st, ss); !errors.Is(err, errNotStreamed) {
			return ent, err
		}
	}
	snap, err := e.store.Snapshot(ctx, st.Name, st.Current)
	if err != nil {
		return nil, err
	}
	b, g, err := e.bodyOf(snap)
	if err != nil {
		return nil, err
	}
	snap = nil // its instances are g's: lean once rendered
	switch {
	case g == nil: // opaque
	case b.gzipped == nil:
		if b, g, err = e.keepRendering(b.Version, g); err != nil {
			return nil, err
		}
	default:
		// Bytes its rows do not render, kept compressed: the index still
		// learns the rendering, which a writer of the rows' layout sends.
		if _, err := g.RenderIndexTo(io.Discard, g.Format); err != nil {
			return nil, fmt.Errorf("version %d of %q: %w", st.Current, st.Name, err)
		}
		g.Lean()
	}
	return e.cache.put(st.Name, b, g), nil
}

// Graph returns the parsed current version of a state. ErrEncrypted when
// the state is client-side encrypted; ErrNotFound when it has no version.
func (e *Engine) Graph(ctx context.Context, name string) (*Graph, *Version, error) {
	d, g, err := e.current(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if g == nil {
		return nil, nil, encryptedError(name)
	}
	v := d.Version
	return g, &v, nil
}

func encryptedError(name string) error {
	return fmt.Errorf("state %q: %w: its resources cannot be read by the server; history, locking and whole-version rollback still work", name, ErrEncrypted)
}

// SharedPlans reports whether plans take shared read locks on states that
// do not choose for themselves.
func (e *Engine) SharedPlans() bool { return e.sharedPlans }

// Lock takes a lock on a state, creating the state in the engine's default
// lock mode when it does not exist. A plan's lock is a shared read lock
// where plans share (see Options.ClassicPlanLocks). See Store.Lock for the
// errors.
func (e *Engine) Lock(ctx context.Context, name string, info LockInfo) (*Lock, error) {
	return e.LockWith(ctx, name, info, LockRequest{})
}

// LockRequest says who asks for a lock, beyond its LockInfo.
type LockRequest struct {
	// Run is the apply run whose CLI apply locks ("" for none).
	Run string
	// ReadOnly is a caller that may only read: it gets a plan's shared
	// read lock or a *ReadOnlyLockError.
	ReadOnly bool
	// NoCreate says the lock must not create the state (see
	// LockOptions.NoCreate).
	NoCreate bool
}

// LockWith takes a lock as Lock does, for the caller r describes.
func (e *Engine) LockWith(ctx context.Context, name string, info LockInfo, r LockRequest) (*Lock, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	if r.Run != "" {
		if err := ValidRunID(r.Run); err != nil {
			return nil, err
		}
	}
	if info.ID == "" {
		return nil, &InvalidError{Code: "lock_id_missing", Message: "the lock info has no ID", Hint: `send LockInfo JSON with an "ID", as terraform and tofu do`}
	}
	if info.Created.IsZero() {
		info.Created = e.now().UTC()
	}
	var seen State
	l, err := e.store.Lock(ctx, name, info, LockOptions{Mode: e.mode, MaxHolders: e.holders, Run: r.Run, SharedPlans: e.sharedPlans, ReadOnly: r.ReadOnly, NoCreate: r.NoCreate, Seen: &seen})
	if err == nil && seen.Name == name {
		e.sawLock(*l, seen)
	}
	return l, err
}

// sawLock keeps what the lock l saw of its state, when the holder's next
// write may use it (Commit.Expect): a plain exclusive write lock.
func (e *Engine) sawLock(l Lock, st State) {
	if x := (Expectation{Lock: l}); !l.Transient && x.Holds(&st) {
		e.seen.Store(st.Name, &seenLock{lock: l, state: st})
	}
}

// seenState returns, once, the state as the lock o.LockID saw it when
// this engine took it and nothing since told otherwise, and what the
// write assumes of it (Commit.Expect); nil when the write must read the
// state.
func (e *Engine) seenState(name string, o WriteOptions) (*State, *Expectation) {
	v, ok := e.seen.LoadAndDelete(name)
	if !ok || o.Force || o.LockID == "" {
		return nil, nil
	}
	sl := v.(*seenLock)
	if sl.lock.Info.ID != o.LockID {
		return nil, nil
	}
	st := sl.state
	return &st, &Expectation{Lock: sl.lock}
}

// Unlock releases the lock id on a state. With force, an empty id releases
// every write lock; a forced unlock is logged with who held what.
func (e *Engine) Unlock(ctx context.Context, name, id string, force bool) ([]Lock, error) {
	return e.UnlockWith(ctx, name, id, UnlockOptions{Force: force})
}

// UnlockWith releases locks as Store.Unlock does with opts.
func (e *Engine) UnlockWith(ctx context.Context, name, id string, opts UnlockOptions) ([]Lock, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	if v, ok := e.seen.Load(name); ok && (opts.Force || v.(*seenLock).lock.Info.ID == id) {
		e.seen.CompareAndDelete(name, v)
	}
	released, err := e.store.Unlock(ctx, name, id, opts)
	if err != nil {
		return nil, err
	}
	if opts.Force {
		for _, l := range released {
			e.log.Warn("forced unlock", "state", name, "lock_id", l.Info.ID, "holder", l.Info.Who, "operation", l.Info.Operation, "held_for", e.now().Sub(l.Acquired).Round(time.Second))
		}
	}
	return released, nil
}

// WriteOptions describe a write.
type WriteOptions struct {
	// LockID is the lock the writer holds ("" for none).
	LockID string
	// Actor names the writer; empty means the lock holder's Who.
	Actor string
	// Source of the new version; empty means SourceApply under a lock and
	// SourcePush without one.
	Source Source
	// Force skips the lineage and stale-serial guards.
	Force bool
	// Verify, when set, checks the body (a checksum, say) while Write
	// parses it: it is called once, before anything is stored, and its
	// error fails the write, nothing stored. It also wins over any other
	// error of the write: a body that is not what was sent explains them.
	Verify func() error
	// Release, when set, is called at most once, when Write reads body no
	// more and nothing it keeps refers into it: once body is parsed,
	// verified and known to be what rendering the new version gives, and
	// kept (see Keep), before the commit, so that the caller may free
	// body's memory (the HTTP handler unmaps it) while the store writes. A
	// write that must be recomputed after that (another process committed
	// first) reads the bytes it kept. Write does not call it for a body
	// it keeps bytes of compressed (one no rendering gives back, an
	// encrypted one) or merges.
	Release func()
	// Spool, when set, is the Spool body maps (see SpoolFile), its
	// bytes written through Spool.Write: Write takes body's hash from it,
	// reads body's bytes from it where it need not touch body's pages
	// (comparing it with the current version, or with its rendering), and
	// takes it over as the new version's bytes when they are body, rather
	// than copy them. Once Spool.Taken, it is the engine's, which closes
	// it; the caller must neither close it nor change its bytes.
	Spool *Spool
	// Owned says body is the writer's to give away: Write may keep body
	// itself, not a copy, as the new version's bytes (a small body, kept
	// in memory, whose capacity is its length). The caller must then never
	// change body nor reuse its memory, once Write is called. The HTTP
	// handler's bodies are: each is read into memory of its own.
	Owned bool
	// Done, when set, is told which bytes of body Write has read and will
	// not read again soon, as it reads them (see graph.ParseOptions.Done):
	// body may map a file whose pages the caller gives back behind each
	// pass over it, so that a large body never takes its size in memory.
	Done func(from, to int)
}

// WriteResult is the outcome of a write.
type WriteResult struct {
	Version Version
	Stats   WriteStats
	// Unchanged is true when the body was byte-identical to the current
	// version, so no version was added.
	Unchanged bool
	// QuotaWarnings are the scopes the write left above a soft limit (see
	// Commit.QuotaWarnings).
	QuotaWarnings []QuotaCount
}

// maxStaleRetries bounds how often a write is recomputed after another
// process moved the state underneath it.
const maxStaleRetries = 200

// Write parses body (a tfstate document, or an opaque client-side encrypted
// one), turns it into changes against the current version and commits them
// as a new version. The cost beyond one scan of body is proportional to what
// changed when the current version is cached. Writes to one state from this
// Engine are queued; a write that loses a race with another process is
// recomputed against the new current version.
func (e *Engine) Write(ctx context.Context, name string, body []byte, o WriteOptions) (*WriteResult, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	mu, _ := e.writers.LoadOrStore(name, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	verify := func() error { return nil }
	if o.Verify != nil {
		verify = sync.OnceValue(o.Verify)
	}
	p := parsed{verify: verify, body: body}
	for attempt := 0; ; attempt++ {
		if p.released && p.body == nil {
			// Released, then raced: the same bytes again, from those the
			// write kept, parsed again against the new current version
			// (the parse's instances referred into the body released).
			var err error
			if p.body, err = p.kept.bytes(); err != nil {
				return nil, err
			}
			p.done, p.graph, o.Done = false, nil, nil
		}
		res, err := e.write(ctx, name, p.body, o, &p)
		if err != nil {
			if verr := verify(); verr != nil {
				return nil, verr
			}
		}
		if !errors.Is(err, ErrStale) || attempt >= maxStaleRetries {
			return res, err
		}
		if errors.Is(err, errSeenStale) {
			continue // at once: this time the write reads the state
		}
		// Another process committed first: back off a little, at random,
		// so that replicas racing for one state do not keep colliding.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(1+rand.IntN(1+min(attempt, 20))) * time.Millisecond):
		}
	}
}

// parsed is the parse of a write's body, kept across its retries with
// what the write loaded to merge it.
type parsed struct {
	done      bool
	graph     *graph.State
	encrypted bool
	// envelope is the clear part of an encrypted body.
	envelope graph.Envelope
	err      error
	// base is the version an optimistic lock read, when comparing the
	// body with it by meaning needed its objects (see sameAsBase).
	base *Snapshot
	// verify is WriteOptions.Verify, run once.
	verify func() error
	// body is the document being written; nil once released, when kept
	// gives it back.
	body     []byte
	kept     *docBytes
	released bool
}

// parse parses body, once per write (against prev, the current
// version's index, when there is one, or the spellings the store kept of
// its instances: the result is the same, either only makes it cheaper).
// Lean: the upserts' objects are read back from the body as the store
// writes them, never all held (see Commit.Object).
func (p *parsed) parse(body []byte, prev *graph.State, spelled map[graph.Hash]graph.Spelled, o WriteOptions) {
	if p.done {
		return
	}
	p.done = true
	p.graph, p.err = graph.ParseWith(body, graph.ParseOptions{Prev: prev, Spelled: spelled, Done: o.Done, Lean: true, Envelope: &p.envelope})
	p.encrypted = errors.Is(p.err, graph.ErrEncrypted)
}

// keep keeps body as the new version's bytes (see keepDoc), once, and
// then hands it back to the writer (WriteOptions.Release): the graphs that
// refer into it let go of it first. Only the parse and held may refer into
// it here (the merge of an optimistic write, which builds graphs of its
// own, keeps the body).
func (p *parsed) keep(e *Engine, o *WriteOptions, held *graph.State, c *Commit) *docBytes {
	if p.kept == nil {
		p.kept = e.keepDoc(p.body, o)
	}
	if o.Release != nil && !p.released {
		p.released = true
		held.Detach()
		p.graph.Detach()
		(&graph.State{Instances: c.Upserts}).Detach()
		p.body = nil
		o.Release()
	}
	return p.kept
}

func (e *Engine) write(ctx context.Context, name string, body []byte, o WriteOptions, p *parsed) (*WriteResult, error) {
	// Under an exclusive lock this engine took, the state is what the lock
	// (or the holder's last write) saw: the store's transaction checks that
	// it still is (Commit.Expect), and the write is done again, reading
	// the state, when it is not.
	st, expect := e.seenState(name, o)
	var err error
	if st == nil {
		st, err = e.store.State(ctx, name)
	}
	switch {
	case errors.Is(err, ErrNotFound):
		// A state created by its first write gets the default mode too.
		if e.mode != LockExclusive {
			if err := e.store.SetLockMode(ctx, name, e.mode); err != nil && !errors.Is(err, ErrConflict) {
				return nil, err
			}
		}
		st = &State{Name: name, LockMode: e.mode}
	case err != nil:
		return nil, err
	}
	var (
		prev      *cacheEntry
		prevIndex *graph.State
		// cold, when set, is what the write is diffed against instead
		// of prev: the current version was not cached, and the store
		// read only its instances' hashes (see coldIndex).
		cold *coldIndex
		// src reads body's bytes without touching its pages, and
		// bodySum is their hash, from the Spool they were written to
		// when there is one; spooled is that Spool (nil: the comparison
		// with the rendering reads body in place, not copies of it).
		src     io.ReaderAt = bytes.NewReader(body)
		spooled io.ReaderAt
		bodySum = sync.OnceValue(func() uint64 { return sumOfDone(body, o.Done) })
	)
	if sp := o.Spool; sp != nil && !p.released {
		if fi, err := sp.Stat(); err == nil && fi.Size() == int64(len(body)) {
			src, spooled = sp, sp
			if sum, ok := sp.sum(int64(len(body))); ok {
				bodySum = func() uint64 { return sum }
			}
		}
	}
	if st.Current > 0 {
		if prev = e.cache.lookup(st.Name, st.CurrentID, false); prev == nil {
			if cold, err = e.readColdIndex(ctx, st, body, o, p); err != nil {
				return nil, err
			}
		}
	}
	if st.Current > 0 && cold == nil {
		var same bool
		if prev, same, err = e.currentIs(ctx, st, prev, body, bodySum, src); err != nil {
			return nil, err
		}
		if same && expect != nil {
			// Nothing is committed to check the state against: read it.
			return nil, errSeenStale
		}
		if same {
			// A byte-identical re-POST adds nothing, but is still held to
			// the lock rules.
			if err := CheckCommit(st, &Commit{Parent: st.Current, LockID: o.LockID, Force: true}); err != nil {
				return nil, err
			}
			if err := p.verify(); err != nil {
				return nil, err
			}
			return &WriteResult{Version: prev.version, Unchanged: true}, nil
		}
		if prev.body != nil {
			prev.body.dropGzip()
		}
		e.cache.dropFull(prev)
		if prevIndex, err = prev.lean(); err != nil {
			return nil, err
		}
	}

	p.parse(body, prevIndex, nil, o)
	g, encrypted := p.graph, p.encrypted
	if p.err != nil && !encrypted {
		return nil, parseError(p.err)
	}
	// Parsed: before anything is decided on it (a merge, a refusal on
	// record), the body must be what was sent.
	if err := p.verify(); err != nil {
		return nil, err
	}
	if !encrypted && st.ClientEncryptionRequired() {
		// Refused before any work; the store's transaction checks it
		// again (CheckCommit).
		return nil, e.reject(ctx, st, o, encryptionRequired(st))
	}

	c := &Commit{Parent: st.Current, LockID: o.LockID, Force: o.Force, Expect: expect}
	c.Version.Source = o.Source
	if c.Version.Source == "" {
		c.Version.Source = writeSource(o.LockID, st.Locks)
	}
	c.Version.Actor = o.Actor
	if c.Version.Actor == "" {
		for _, l := range st.Locks {
			if l.Info.ID == o.LockID {
				c.Version.Actor = l.Info.Who
			}
		}
	}
	// next is the new version's body and index (lean): its bytes kept,
	// or rendered from the graph the store will hold.
	var next func(v Version) (*Body, *graph.State, error)
	// An optimistic state's writes (and an apply run's) are merged onto
	// what others committed since their base; one that cannot be merged,
	// its body or the current version being encrypted, goes in only as a
	// fast-forward.
	merging := (st.LockMode == LockOptimistic || runLock(st, o.LockID)) && st.Current > 0 && !o.Force
	if encrypted {
		// An opaque blob: locking, history and whole-version rollback work,
		// graph features do not. Its serial and lineage are in the clear,
		// and held to the guards as a plaintext state's are.
		if err := envelopeVersion(c, &p.envelope, st, o.Force); err != nil {
			return nil, err
		}
		if merging {
			if err := e.fastForward(ctx, st, c, o); err != nil {
				return nil, err
			}
		}
		c.Raw = gzipBytes(body)
		if prevIndex != nil {
			for i := range prevIndex.Instances {
				c.Removed = append(c.Removed, prevIndex.Instances[i].ID())
			}
			for _, out := range prevIndex.Outputs {
				c.OutputsRemoved = append(c.OutputsRemoved, out.Name)
			}
			c.Version.Removed = len(c.Removed)
		}
		size, sum := len(body), sumOf(body)
		next = func(v Version) (*Body, *graph.State, error) {
			b := &Body{Version: v, gzipped: c.Raw, size: int64(size), sum: sum}
			b.measure.Do(func() {})
			return b, nil, nil
		}
	} else {
		// The whole current graph, made when the lean index cannot do: a
		// respelled object kept in its stored spelling, a merge.
		full := func() (*graph.State, error) {
			if cold != nil {
				return cold.whole(ctx, e.store)
			}
			f, err := e.fullGraph(ctx, prev)
			if err == nil && f == nil {
				err = encryptedError(name)
			}
			return f, err
		}
		var (
			held    *graph.State
			lacking bool
		)
		if cold != nil {
			if held, err = diffHashes(c, cold.hashes, cold.snap.Outputs, g, cold.some(ctx)); err != nil {
				return nil, err
			}
		} else {
			held, lacking = diffInto(c, prevIndex, g)
		}
		if lacking {
			f, err := full()
			if err != nil {
				return nil, err
			}
			*c = Commit{Parent: c.Parent, LockID: c.LockID, Force: c.Force, Expect: c.Expect, Version: Version{Source: c.Version.Source, Actor: c.Version.Actor}}
			held, _ = diffInto(c, f, g)
		}
		c.Version.Format = g.Format.String()
		// Lean upserts are read back from the body (from the bytes kept
		// of it, once it is handed back).
		c.doc = &docBytes{mem: body, n: int64(len(body))}
		var merged *graph.State
		switch {
		case merging && (prevIndex != nil || cold != nil):
			if merged, err = e.rebase(ctx, st, c, full, held, o, p); err != nil {
				return nil, err
			}
		case merging: // the current version is encrypted
			if err := e.fastForward(ctx, st, c, o); err != nil {
				return nil, err
			}
		}
		switch {
		case merged != nil:
			// Made by the server: its document is its rendering.
			next = func(v Version) (*Body, *graph.State, error) { return e.keepRendering(v, merged) }
		case held.RenderEqualAt(held.Format, body, spooled):
			// What the CLIs write: the rows give the posted bytes back,
			// compared piece by piece, never built. The bytes are kept
			// (the caller's file when it hands it over) before the body
			// goes back to the caller.
			sum := bodySum()
			doc := p.keep(e, &o, held, c)
			c.doc = doc
			next = func(v Version) (*Body, *graph.State, error) {
				held.Lean()
				return keptBody(v, doc, sum), held, nil
			}
		default:
			// Rendering what the store will hold does not give the
			// posted bytes back (another writer's layout, or objects
			// kept in an earlier spelling): keep them.
			c.Raw = keptBytes(held.Render(held.Format), body)
			gz := c.Raw
			if bytes.HasPrefix(gz, []byte(keptDeltaMagic)) {
				gz = gzipBytes(body)
			}
			size, sum := len(body), sumOf(body)
			next = func(v Version) (*Body, *graph.State, error) {
				b := &Body{Version: v, gzipped: gz, size: int64(size), sum: sum}
				b.measure.Do(func() {})
				held.Lean()
				return b, held, nil
			}
		}
	}

	v, stats, err := e.commit(ctx, name, c)
	if err != nil && expect != nil && errors.Is(err, ErrStale) {
		return nil, errSeenStale
	}
	if err != nil {
		var ce *ConflictError
		switch {
		case errors.As(err, &ce) && (ce.Reason == ReasonReserved || ce.Reason == ReasonOutOfScope || ce.Reason == ReasonRunEnded || ce.Reason == ReasonClientEncryptionRequired):
			// The store's transaction decided on the reservations; the
			// CLI shows only "HTTP error: 409", so keep the refusal for
			// `kl conflicts` as a merge conflict is kept.
			return nil, e.reject(ctx, st, o, ce)
		case errors.As(err, &ce):
			e.log.Warn("write refused", "state", name, "reason", ce.Reason, "lock_id", o.LockID, "message", ce.Message)
		}
		return nil, err
	}
	e.sawWrite(st, o.LockID, v)
	b, index, err := next(*v)
	if err != nil {
		// Committed: the version is stored, only this process's copy of
		// it failed; the next read loads it from the store.
		e.log.Error("keeping a committed version failed; it is read from the store next time", "state", name, "version", v.Number, "err", err)
		e.cache.drop(name)
	} else {
		e.cache.put(name, b, index)
	}
	return &WriteResult{Version: *v, Stats: stats, QuotaWarnings: c.QuotaWarnings}, nil
}

// errSeenStale is a write's answer when the state was not what its lock
// saw (see Engine.seenState): Write does it again at once, reading the
// state.
var errSeenStale = fmt.Errorf("%w: the state changed since its lock was taken", ErrStale)

// sawWrite keeps what the write of v under the lock lockID left of st,
// when the holder's next write may use it (see Engine.sawLock): a
// plaintext version.
func (e *Engine) sawWrite(st *State, lockID string, v *Version) {
	if lockID == "" || v.Format == FormatOpaque || st.ClientEncryption != nil {
		return
	}
	for _, l := range st.Locks {
		if l.Info.ID == lockID {
			next := *st
			next.Current, next.CurrentID, next.Serial, next.Lineage = v.Number, v.ID, v.Serial, v.Lineage
			e.sawLock(l, next)
			return
		}
	}
}

// runLock reports whether id is an apply run's lock on st: its writes are
// merged onto what other runs committed since its base, as on an
// optimistic state.
func runLock(st *State, id string) bool {
	for i := range st.Locks {
		if st.Locks[i].Info.ID == id {
			return st.Locks[i].Run != ""
		}
	}
	return false
}

// parseError turns a graph parse error into an *InvalidError with a hint.
func parseError(err error) error {
	var syn *graph.SyntaxError
	var ver *graph.VersionError
	var enc *graph.EncryptionError
	switch {
	case errors.As(err, &enc):
		return &InvalidError{Code: "ambiguous_encryption", Message: enc.Error(),
			Hint: "nothing was stored; a client-side encrypted state is sent exactly as tofu encrypts it ({\"serial\", \"lineage\", \"meta\", \"encrypted_data\", \"encryption_version\"}), and a plaintext state carries no encryption_version: remove that key"}
	case errors.As(err, &syn):
		return &InvalidError{Code: "malformed_json", Message: "the state is not valid JSON: " + syn.Error(), Hint: "send the state file exactly as terraform/tofu wrote it; nothing was stored"}
	case errors.As(err, &ver):
		return &InvalidError{Code: "unsupported_state_version", Message: fmt.Sprintf("state format version %d is not supported; only version 4 is", ver.Version), Hint: "upgrade the state with Terraform >= 0.12 or OpenTofu (they write version 4); nothing was stored"}
	}
	return &InvalidError{Code: "invalid_state", Message: "the state cannot be read: " + err.Error(), Hint: "send the state file exactly as terraform/tofu wrote it; nothing was stored"}
}

// History lists a state's versions, newest first.
func (e *Engine) History(ctx context.Context, name string, opts HistoryOptions) ([]Version, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	return e.store.History(ctx, name, opts)
}

// Delete removes a state with all its history and returns how many
// versions it had. A locked state is deleted only by a holder (opts.LockID)
// or with opts.Force; otherwise the answer is a *LockedError.
func (e *Engine) Delete(ctx context.Context, name string, opts DeleteOptions) (versions int64, err error) {
	if err := ValidStateName(name); err != nil {
		return 0, err
	}
	versions, err = e.store.Delete(ctx, name, opts)
	e.cache.drop(name)
	return versions, err
}

// States lists every state.
func (e *Engine) States(ctx context.Context) ([]State, error) { return e.store.States(ctx) }

// SetAllowLineageChange lets the next writes to a state carry another
// lineage: an operator's decision for one state, before a deliberate
// `state push -force` from another configuration.
func (e *Engine) SetAllowLineageChange(ctx context.Context, name string, allow bool) error {
	if err := ValidStateName(name); err != nil {
		return err
	}
	return e.store.SetAllowLineageChange(ctx, name, allow)
}

// SetSharedPlanLocks sets whether plans take shared read locks on a state;
// nil follows the engine's default (Options.ClassicPlanLocks).
func (e *Engine) SetSharedPlanLocks(ctx context.Context, name string, shared *bool) error {
	if err := ValidStateName(name); err != nil {
		return err
	}
	return e.store.SetSharedPlanLocks(ctx, name, shared)
}

// SetRequireClientEncryption sets whether a state takes only OpenTofu
// client-side encrypted writes; a plaintext write is then refused (a
// *ConflictError, ReasonClientEncryptionRequired) and nothing is stored.
// It creates a missing state, so that its first write is held to it.
func (e *Engine) SetRequireClientEncryption(ctx context.Context, name string, require bool) error {
	if err := ValidStateName(name); err != nil {
		return err
	}
	return e.store.SetRequireClientEncryption(ctx, name, require)
}

// Query runs a read-only SQL statement against the store, within the
// engine's QueryLimits.
func (e *Engine) Query(ctx context.Context, sql string, args ...any) (*QueryResult, error) {
	return e.store.Query(ctx, e.limits, sql, args...)
}

// TypeCount is how many instances of one resource type a state holds.
type TypeCount struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// Status is a state's summary: what `kl status` shows.
type Status struct {
	State
	Version   *Version    `json:"version,omitempty"`
	Instances int         `json:"instances"`
	Types     []TypeCount `json:"types"`
	Encrypted bool        `json:"encrypted"`
	// Drifted is how many instances the open drift records say differ
	// from the real infrastructure; nil when no drift check ran.
	Drifted *int `json:"drifted,omitempty"`
	// Runs are the apply runs in flight (waiting or active), newest first,
	// with their reservations; empty on a store that keeps no runs.
	Runs []ApplyRun `json:"runs"`
	// Quota is how the state and its environment stand against their
	// limits, with the latest refusal; nil on a store that keeps no
	// quotas.
	Quota *QuotaStatus `json:"quota,omitempty"`
}

// Status summarizes a state: current version, lock mode and holders, the
// apply runs in flight, and instance counts by type. ErrNotFound when the
// state does not exist.
func (e *Engine) Status(ctx context.Context, name string) (*Status, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	st, err := e.store.State(ctx, name)
	if err != nil {
		return nil, err
	}
	s := &Status{State: *st, Types: []TypeCount{}}
	if dc, ok := e.store.(DriftCounter); ok {
		drift, err := dc.DriftCounts(ctx, []string{name})
		if err != nil {
			return nil, err
		}
		if n, ok := drift[name]; ok {
			s.Drifted = &n
		}
	}
	if s.Runs, err = e.inFlightRuns(ctx, name); err != nil {
		return nil, err
	}
	if qs, ok := e.store.(QuotaStore); ok {
		if s.Quota, err = qs.QuotaStatus(ctx, name, 0, e.defaultQuota); err != nil {
			return nil, err
		}
	}
	if st.Current == 0 {
		return s, nil
	}
	ent, err := e.indexEntry(ctx, st)
	if err != nil {
		return nil, err
	}
	v := ent.version
	g, err := ent.lean()
	if err != nil {
		return nil, err
	}
	s.Version = &v
	if g == nil {
		s.Encrypted = true
		return s, nil
	}
	counts := map[string]int{}
	for i := range g.Instances {
		counts[g.Instances[i].Resource.Type]++
	}
	for t, n := range counts {
		s.Types = append(s.Types, TypeCount{Type: t, Count: n})
	}
	sort.Slice(s.Types, func(i, j int) bool {
		if s.Types[i].Count != s.Types[j].Count {
			return s.Types[i].Count > s.Types[j].Count
		}
		return s.Types[i].Type < s.Types[j].Type
	})
	s.Instances = len(g.Instances)
	return s, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Operations the CLIs name in the LockInfo of a lock taken by a command
// that writes a state it did not plan: tofu state push, and the
// destination of init -migrate-state (the same in Terraform).
const (
	operationStatePush = "state-push"
	operationMigrate   = "migration destination state"
)

// writeSource is the source of a POST under lockID (none: "") when its
// writer named none: a push without a lock, else what the lock's
// Operation says it is (a state push, a migration), else an apply.
func writeSource(lockID string, locks []Lock) Source {
	if lockID == "" {
		return SourcePush
	}
	for _, l := range locks {
		if l.Info.ID != lockID {
			continue
		}
		switch l.Info.Operation {
		case operationStatePush:
			return SourcePush
		case operationMigrate:
			return SourceMigrate
		}
	}
	return SourceApply
}
