package kilolock_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// readBody returns what b writes plain and gzip-compressed (decompressed),
// failing t unless both are exactly want and its sizes say so.
func checkBody(t *testing.T, b *kilolock.Body, want []byte) {
	t.Helper()
	var plain bytes.Buffer
	if n, err := b.WriteTo(&plain); err != nil || n != int64(len(want)) || !bytes.Equal(plain.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes (%v), not the %d wanted", n, err, len(want))
	}
	if size, err := b.Size(); err != nil || size != int64(len(want)) {
		t.Fatalf("Size = %d, %v; want %d", size, err, len(want))
	}
	var gz bytes.Buffer
	n, err := b.WriteGzipTo(&gz)
	if err != nil || n != int64(gz.Len()) {
		t.Fatalf("WriteGzipTo: %d bytes, %v", n, err)
	}
	zr, err := gzip.NewReader(&gz)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("WriteGzipTo: decompresses to %d bytes (%v), not the %d wanted", len(got), err, len(want))
	}
	if size, ok := b.GzipSize(); !ok || size != n {
		t.Fatalf("GzipSize = %d, %v after a whole WriteGzipTo of %d", size, ok, n)
	}
	all, err := b.Bytes()
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("Bytes: %d bytes (%v), not the %d wanted", len(all), err, len(want))
	}
}

// TestOpenServesEveryKindOfVersion: a version as a CLI posted it, one in
// another writer's layout (kept beside its rows), one the server made (a
// rollback), an opaque one and one read back by another engine (from the
// store, not the cache) are each served exactly, plain and compressed.
func TestOpenServesEveryKindOfVersion(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	posted := enginetest.TFState(t, false, 1, "lin", "a", "b", "c")
	respelled := bytes.ReplaceAll(enginetest.TFState(t, false, 2, "lin", "a", "b", "d"), []byte("\n      "), []byte("\n\t"))
	blob := []byte(`{"serial":1,"lineage":"enc-lin","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"AAAA","encryption_version":"v0"}`)
	for _, w := range []struct {
		name, state string
		doc         []byte
	}{{"posted", "s", posted}, {"respelled", "s", respelled}, {"opaque", "enc", blob}} {
		if _, err := e.Write(ctx, w.state, w.doc, kilolock.WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		t.Run(w.name, func(t *testing.T) {
			b, err := e.Open(ctx, w.state)
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, b, w.doc)
			fresh, err := kilolock.NewEngine(st, kilolock.Options{}).Open(ctx, w.state)
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, fresh, w.doc)
		})
	}
	t.Run("rollback", func(t *testing.T) {
		if _, err := history.Rollback(ctx, e, "s", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}, history.RollbackOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := e.Open(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if g, err := graph.Parse(doc.Bytes); err != nil || g.Serial != 3 {
			t.Fatalf("the rollback's document: %v", err)
		}
		checkBody(t, b, doc.Bytes)
		old, err := e.OpenVersion(ctx, "s", 1)
		if err != nil {
			t.Fatal(err)
		}
		checkBody(t, old, posted)
	})
}

// TestOpenGzipOnceForManyReaders: readers that ask at once for the
// compressed bytes of a new version all get them whole, from one
// compression (run with -race).
func TestOpenGzipOnceForManyReaders(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	doc := graphtest.Generate(2000, 600, graph.FormatIndent)
	if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := e.Open(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.GzipSize(); ok {
		t.Fatal("compressed before anyone asked")
	}
	outs := make([]bytes.Buffer, 8)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			if _, err := b.WriteGzipTo(&outs[i]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range outs {
		if !bytes.Equal(outs[i].Bytes(), outs[0].Bytes()) {
			t.Fatalf("reader %d got other compressed bytes than reader 0", i)
		}
	}
	checkBody(t, b, doc)
	if b2, _ := e.Open(ctx, "big"); b2 != b {
		t.Error("the current version's body is not kept between reads")
	}
}

// TestWriteDropsTheSupersededGzip: the compressed copy of the current
// version, when held in memory (a small state's), is let go once a write
// that changes the state begins (the version is about to be superseded:
// holding the copy through the write costs a quarter of the state at the
// write's peak), not by a byte-identical re-POST; a reader of the old
// version after that compresses it again. A large state's copy is in a
// spool file, costs no memory, and is kept.
func TestWriteDropsTheSupersededGzip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		kept      bool
	}{{"in memory", 300, false}, {"in a file", 2000, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, _ := enginetest.OpenSQLite(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			doc := graphtest.Generate(tc.instances, 600, graph.FormatIndent)
			if large := len(doc) >= 1<<20; large != tc.kept {
				t.Fatalf("a state of %d bytes: large %v", len(doc), large)
			}
			series, err := graphtest.NewSeries(doc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Write(ctx, "s", doc, kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			b, err := e.Open(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, b, doc) // compresses it
			if res, err := e.Write(ctx, "s", bytes.Clone(doc), kilolock.WriteOptions{}); err != nil || !res.Unchanged {
				t.Fatalf("re-POST of the current bytes: %+v, %v; want unchanged", res, err)
			}
			if _, ok := b.GzipSize(); !ok {
				t.Error("a byte-identical re-POST dropped the compressed copy")
			}
			next := series.Next()
			if _, err := e.Write(ctx, "s", next, kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if size, ok := b.GzipSize(); ok != tc.kept {
				t.Errorf("the superseded version holds its compressed copy of %d bytes: %v, want %v", size, ok, tc.kept)
			}
			checkBody(t, b, doc)
			nb, err := e.Open(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, nb, next)
		})
	}
}

// TestGzipReadersDuringWrites: gzip readers of the current version, while
// writes supersede it (and drop its compressed copy) one after another,
// each get exactly the version they opened.
func TestGzipReadersDuringWrites(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	series, err := graphtest.NewSeries(graphtest.Generate(300, 300, graph.FormatIndent))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		docs = map[int64][]byte{}
	)
	write := func() {
		// Known before it is written: a reader may open it at once.
		doc := series.Next()
		mu.Lock()
		n := int64(len(docs) + 1)
		docs[n] = doc
		mu.Unlock()
		if res, err := e.Write(ctx, "s", doc, kilolock.WriteOptions{}); err != nil || res.Version.Number != n {
			t.Fatalf("write: %+v, %v; want version %d", res, err, n)
		}
	}
	write()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				b, err := e.Open(ctx, "s")
				if err != nil {
					t.Error(err)
					return
				}
				var gz bytes.Buffer
				if _, err := b.WriteGzipTo(&gz); err != nil {
					t.Error(err)
					return
				}
				got, err := gunzip(gz.Bytes())
				mu.Lock()
				want := docs[b.Version.Number]
				mu.Unlock()
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("version %d: gzip read of %d bytes (%v), not the %d posted", b.Version.Number, len(got), err, len(want))
					return
				}
			}
		})
	}
	for range 30 {
		write()
	}
	close(done)
	wg.Wait()
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// TestWriteKeepsNoPostedBytes: once a large write is committed, the engine
// keeps the version's bytes in a spool file and its lean index, not the
// posted document (the caller's memory) nor anything referring into it.
func TestWriteKeepsNoPostedBytes(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	series, err := graphtest.NewSeries(graphtest.Generate(3000, 512, graph.FormatIndent))
	if err != nil {
		t.Fatal(err)
	}
	var last []byte
	freed := make(chan int, 2)
	for i := range 2 {
		doc := series.Next()
		if _, err := e.Write(ctx, "s", doc, kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		last = bytes.Clone(doc)
		runtime.AddCleanup(&doc[0], func(i int) { freed <- i }, i)
	}
	for i := range 2 {
		deadline := time.After(10 * time.Second)
		for done := false; !done; {
			runtime.GC()
			select {
			case <-freed:
				done = true
			case <-time.After(10 * time.Millisecond):
			case <-deadline:
				t.Fatalf("posted document %d is still held after its write", i)
			}
		}
	}
	b, err := e.Open(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	checkBody(t, b, last)
	// The next write still reuses what it can of the kept graph: it is
	// unchanged by an identical re-POST, and a change is found.
	if res, err := e.Write(ctx, "s", last, kilolock.WriteOptions{}); err != nil || !res.Unchanged {
		t.Fatalf("re-POST of the current bytes: %+v, %v; want unchanged", res, err)
	}
	next := series.Next()
	if res, err := e.Write(ctx, "s", next, kilolock.WriteOptions{}); err != nil || res.Unchanged || res.Version.Changed != 2 {
		t.Fatalf("next version: %+v, %v; want 2 changed", res, err)
	}
}

// TestWriteVerify: a write whose Verify fails stores nothing and answers
// Verify's error, whatever else is wrong with the body.
func TestWriteVerify(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	first := enginetest.TFState(t, false, 1, "lin", "a")
	if _, err := e.Write(ctx, "s", first, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("checksum mismatch")
	for name, doc := range map[string][]byte{
		"a change":          enginetest.TFState(t, false, 2, "lin", "b"),
		"the current bytes": first,
		"malformed":         first[:10],
		"another lineage":   enginetest.TFState(t, false, 2, "other", "b"),
	} {
		calls := 0
		_, err := e.Write(ctx, "s", doc, kilolock.WriteOptions{Verify: func() error { calls++; return bad }})
		if !errors.Is(err, bad) || calls != 1 {
			t.Errorf("%s: Write = %v after %d calls of Verify, want its error after 1", name, err, calls)
		}
	}
	if h, _ := e.History(ctx, "s", kilolock.HistoryOptions{}); len(h) != 1 {
		t.Errorf("%d versions after refused writes, want 1", len(h))
	}
	ok := 0
	if _, err := e.Write(ctx, "s", enginetest.TFState(t, false, 2, "lin", "b"), kilolock.WriteOptions{Verify: func() error { ok++; return nil }}); err != nil || ok != 1 {
		t.Errorf("a verified write: %v, Verify called %d times", err, ok)
	}
}
