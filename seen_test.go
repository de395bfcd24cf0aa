package kilolock_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// stateConfig is what an operator changes of a state while it is locked.
type stateConfig interface {
	SetRequireClientEncryption(ctx context.Context, name string, require bool) error
	SetAllowLineageChange(ctx context.Context, name string, allow bool) error
}

// TestWriteUnderSeenLock: a write under an exclusive lock the engine took
// reads no state (the lock saw it, and the store's transaction checks it
// still holds), and it does exactly what a write that read the state does
// when the state changed in between, whatever changed: each case runs on
// two states, one locked through the writing engine and one through
// another engine on the same database (a replica, so the writer knows
// nothing of its lock), and the answers, versions and bytes must match.
// On both stores.
func TestWriteUnderSeenLock(t *testing.T) {
	ctx := context.Background()
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			raw := open(t)
			config, ok := raw.(stateConfig)
			if !ok {
				t.Fatalf("%T cannot configure states", raw)
			}
			reads := newReadCounter(t, raw)
			e := kilolock.NewEngine(reads, kilolock.Options{})
			other := kilolock.NewEngine(raw, kilolock.Options{})
			info := func(id string) kilolock.LockInfo {
				return kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: id + "@host", Version: "1.10.10"}
			}
			v1 := enginetest.TFState(t, false, 1, "lin", "a", "b", "c")
			v2 := enginetest.TFState(t, false, 2, "lin", "a", "B", "c")

			// The plain case, twice under one lock: no state read.
			name := "seen-plain"
			enginetest.Write(t, e, name, v1)
			if _, err := e.Lock(ctx, name, info("L1")); err != nil {
				t.Fatal(err)
			}
			for i, doc := range [][]byte{v2, enginetest.TFState(t, false, 3, "lin", "a", "B", "C")} {
				before := reads.counts()
				res, err := e.Write(ctx, name, doc, kilolock.WriteOptions{LockID: "L1"})
				if err != nil {
					t.Fatalf("write %d under the lock: %v", i+1, err)
				}
				if d := reads.counts().minus(before); d.states != 0 {
					t.Errorf("write %d under the engine's own lock read the state %d times, want none", i+1, d.states)
				}
				if v := res.Version; v.Changed != 1 || v.Source != kilolock.SourceApply || v.Actor != "L1@host" || v.LockID != "L1" {
					t.Errorf("write %d: version %+v, want 1 changed, by apply, L1@host under L1", i+1, v)
				}
				if got := enginetest.MustRead(t, other, name); !bytes.Equal(got, doc) {
					t.Errorf("write %d: another engine reads %d bytes that are not the %d posted", i+1, len(got), len(doc))
				}
			}
			if _, err := e.Unlock(ctx, name, "L1", false); err != nil {
				t.Fatal(err)
			}
			before := reads.counts()
			if _, err := e.Write(ctx, name, enginetest.TFState(t, false, 4, "lin", "A", "B", "C"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if d := reads.counts().minus(before); d.states != 1 {
				t.Errorf("a write without a lock read the state %d times, want once", d.states)
			}

			cases := []struct {
				name string
				// between changes the state after it was locked with id
				// "holder", before the write.
				between func(t *testing.T, name string)
				doc     []byte
			}{
				{"nothing between", nil, v2},
				{"the same bytes again", nil, v1},
				{"the lock forced off and taken by another", func(t *testing.T, name string) {
					if _, err := other.Unlock(ctx, name, "", true); err != nil {
						t.Fatal(err)
					}
					if _, err := other.Lock(ctx, name, info("thief")); err != nil {
						t.Fatal(err)
					}
				}, v2},
				{"the lock forced off", func(t *testing.T, name string) {
					if _, err := other.Unlock(ctx, name, "", true); err != nil {
						t.Fatal(err)
					}
				}, v2},
				{"the lock released and taken again with its id", func(t *testing.T, name string) {
					if _, err := other.Unlock(ctx, name, "holder", false); err != nil {
						t.Fatal(err)
					}
					if _, err := other.Lock(ctx, name, info("holder")); err != nil {
						t.Fatal(err)
					}
				}, v2},
				{"the lock's id taken by another holder", func(t *testing.T, name string) {
					if _, err := other.Unlock(ctx, name, "", true); err != nil {
						t.Fatal(err)
					}
					li := info("holder")
					li.Who, li.Operation = "someone-else@host", "OperationTypeInvalid"
					if _, err := other.Lock(ctx, name, li); err != nil {
						t.Fatal(err)
					}
				}, v2},
				{"client encryption required meanwhile", func(t *testing.T, name string) {
					if err := config.SetRequireClientEncryption(ctx, name, true); err != nil {
						t.Fatal(err)
					}
				}, v2},
				{"another lineage, not allowed", nil, enginetest.TFState(t, false, 2, "other", "a", "B", "c")},
				{"another lineage, allowed meanwhile", func(t *testing.T, name string) {
					if err := config.SetAllowLineageChange(ctx, name, true); err != nil {
						t.Fatal(err)
					}
				}, enginetest.TFState(t, false, 2, "other", "a", "B", "c")},
				{"a serial not above the lock's", nil, enginetest.TFState(t, false, 1, "lin", "a", "B", "c")},
			}
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					type outcome struct {
						Err       string
						Unchanged bool
						Version   kilolock.Version
						Doc       []byte
						History   []kilolock.Version
					}
					run := func(name string, locker *kilolock.Engine) outcome {
						enginetest.Write(t, e, name, v1)
						if _, err := locker.Lock(ctx, name, info("holder")); err != nil {
							t.Fatal(err)
						}
						if tc.between != nil {
							tc.between(t, name)
						}
						var o outcome
						res, err := e.Write(ctx, name, tc.doc, kilolock.WriteOptions{LockID: "holder"})
						if err != nil {
							o.Err = fmt.Sprintf("%T %v", err, err)
						} else {
							o.Unchanged, o.Version = res.Unchanged, res.Version
						}
						o.Doc = enginetest.MustRead(t, other, name)
						if o.History, err = other.History(ctx, name, kilolock.HistoryOptions{}); err != nil {
							t.Fatal(err)
						}
						return o
					}
					seen, read := run(fmt.Sprintf("seen-%d", i), e), run(fmt.Sprintf("read-%d", i), other)
					ignore := cmpopts.IgnoreFields(kilolock.Version{}, "ID", "State", "Created")
					if diff := cmp.Diff(read, seen, ignore, cmpopts.EquateEmpty(),
						cmp.Transformer("names", func(s string) string { return normalizeName(s, i) })); diff != "" {
						t.Errorf("the write under the engine's own lock differs from one that read the state (-read +seen):\n%s", diff)
					}
				})
			}
		})
	})
}

// normalizeName makes the names of case i's two states alike in errors.
func normalizeName(s string, i int) string {
	return string(bytes.ReplaceAll([]byte(s), []byte(fmt.Sprintf("seen-%d", i)), []byte(fmt.Sprintf("read-%d", i))))
}
