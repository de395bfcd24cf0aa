package kilolock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/store/sqlite"
)

func TestEngineServesTheWrittenBytes(t *testing.T) {
	ctx := context.Background()
	for _, compact := range []bool{true, false} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			st, _ := enginetest.OpenSQLite(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			var last []byte
			for serial := 1; serial <= 3; serial++ {
				last = enginetest.TFState(t, compact, serial, "lin-1", "a", fmt.Sprint(serial), "c")
				if _, err := e.Write(ctx, "example", last, kilolock.WriteOptions{}); err != nil {
					t.Fatalf("write serial %d: %v", serial, err)
				}
			}
			doc, err := e.Read(ctx, "example")
			if err != nil || !bytes.Equal(doc.Bytes, last) {
				t.Fatalf("Read = %q, %v; want the written bytes", doc.Bytes, err)
			}
			// A second engine has no cache: it renders from the rows, and
			// must still give the exact bytes, with nothing stored raw.
			fresh := kilolock.NewEngine(st, kilolock.Options{})
			doc, err = fresh.Read(ctx, "example")
			if err != nil || !bytes.Equal(doc.Bytes, last) {
				t.Fatalf("fresh Read = %q, %v; want the written bytes", doc.Bytes, err)
			}
			if n := enginetest.RawVersions(t, st); n != 0 {
				t.Fatalf("%d versions kept raw bytes; rendering should reproduce the CLI's layout", n)
			}
			old, err := fresh.ReadVersion(ctx, "example", 2)
			if want := enginetest.TFState(t, compact, 2, "lin-1", "a", "2", "c"); err != nil || !bytes.Equal(old.Bytes, want) {
				t.Fatalf("ReadVersion(2) = %q, %v; want %q", old.Bytes, err, want)
			}
		})
	}
}

func TestEngineKeepsUnusualBytes(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	body := bytes.ReplaceAll(enginetest.TFState(t, true, 1, "lin", "x"), []byte(`,"serial"`), []byte(` ,  "serial"`))
	if _, err := e.Write(ctx, "odd", body, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	doc, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "odd")
	if err != nil || !bytes.Equal(doc.Bytes, body) {
		t.Fatalf("Read = %q, %v; want the exact unusual bytes", doc.Bytes, err)
	}
}

func TestEngineTwoEnginesOneStore(t *testing.T) {
	ctx := context.Background()
	st, path := enginetest.OpenSQLite(t)
	st2, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	a := kilolock.NewEngine(st, kilolock.Options{})
	b := kilolock.NewEngine(st2, kilolock.Options{})
	for serial := 1; serial <= 6; serial++ {
		w := a
		if serial%2 == 0 {
			w = b
		}
		if _, err := w.Write(ctx, "shared", enginetest.TFState(t, true, serial, "lin", "v", fmt.Sprint(serial)), kilolock.WriteOptions{}); err != nil {
			t.Fatalf("write %d: %v", serial, err)
		}
	}
	hist, err := a.History(ctx, "shared", kilolock.HistoryOptions{})
	if err != nil || len(hist) != 6 {
		t.Fatalf("history = %d versions, %v; want 6", len(hist), err)
	}
	for _, e := range []*kilolock.Engine{a, b} {
		doc, err := e.Read(ctx, "shared")
		if err != nil || !bytes.Equal(doc.Bytes, enginetest.TFState(t, true, 6, "lin", "v", "6")) {
			t.Fatalf("Read after writes from two engines = %v; want serial 6", err)
		}
	}
}

func TestEngineLockRules(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	if _, err := e.Lock(ctx, "s", kilolock.LockInfo{ID: "L1", Who: "alice", Operation: "OperationTypeApply"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Lock(ctx, "s", kilolock.LockInfo{ID: "L2", Who: "bob"})
	var le *kilolock.LockedError
	if !errors.As(err, &le) || le.Holder.Who != "alice" {
		t.Fatalf("second lock = %v, want LockedError naming alice", err)
	}
	body := enginetest.TFState(t, true, 1, "lin", "x")
	if _, err := e.Write(ctx, "s", body, kilolock.WriteOptions{}); !errors.Is(err, kilolock.ErrLocked) {
		t.Fatalf("write without id = %v, want ErrLocked", err)
	}
	if _, err := e.Write(ctx, "s", body, kilolock.WriteOptions{LockID: "L2"}); !errors.Is(err, kilolock.ErrLockMismatch) {
		t.Fatalf("write with wrong id = %v, want ErrLockMismatch", err)
	}
	res, err := e.Write(ctx, "s", body, kilolock.WriteOptions{LockID: "L1"})
	if err != nil || res.Version.Actor != "alice" || res.Version.Source != kilolock.SourceApply {
		t.Fatalf("write under lock = %+v, %v; want source apply by alice", res, err)
	}
	if _, err := e.Write(ctx, "s", body, kilolock.WriteOptions{LockID: "L2"}); !errors.Is(err, kilolock.ErrLockMismatch) {
		t.Fatalf("identical re-POST with wrong id = %v, want ErrLockMismatch", err)
	}
	if _, err := e.Unlock(ctx, "s", "L1", false); err != nil {
		t.Fatal(err)
	}
	other := enginetest.TFState(t, true, 2, "another-lineage", "x")
	_, err = e.Write(ctx, "s", other, kilolock.WriteOptions{})
	var ce *kilolock.ConflictError
	if !errors.As(err, &ce) || ce.Reason != kilolock.ReasonLineage || ce.Lineage != "lin" || ce.GotLineage != "another-lineage" {
		t.Fatalf("write of another lineage = %v, want a lineage conflict naming both", err)
	}
	hist, _ := e.History(ctx, "s", kilolock.HistoryOptions{})
	if len(hist) != 1 {
		t.Fatalf("refused writes left %d versions, want 1", len(hist))
	}
}

func TestEngineRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	good := enginetest.TFState(t, true, 1, "lin", "x")
	if _, err := e.Write(ctx, "s", good, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{
		"malformed": []byte(`{"version":4,`),
		"version 3": bytes.Replace(good, []byte(`"version":4`), []byte(`"version":3`), 1),
		"not json":  []byte("hello"),
		"empty":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.Write(ctx, "s", body, kilolock.WriteOptions{})
			var ie *kilolock.InvalidError
			if !errors.As(err, &ie) || ie.Hint == "" {
				t.Fatalf("Write = %v, want *InvalidError with a hint", err)
			}
			doc, err := e.Read(ctx, "s")
			if err != nil || !bytes.Equal(doc.Bytes, good) {
				t.Fatalf("state changed after a refused write")
			}
		})
	}
}

func TestEngineOpaqueEncryptedState(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	if _, err := e.Write(ctx, "enc", enginetest.TFState(t, true, 1, "lin", "x"), kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	blob := []byte(`{"serial":2,"lineage":"lin","meta":{"key_provider.pbkdf2.k":"eyJzYWx0Ijo"},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`)
	if _, err := e.Write(ctx, "enc", blob, kilolock.WriteOptions{}); err != nil {
		t.Fatalf("write encrypted: %v", err)
	}
	doc, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "enc")
	if err != nil || !bytes.Equal(doc.Bytes, blob) {
		t.Fatalf("Read = %q, %v; want the blob", doc.Bytes, err)
	}
	if _, _, err := e.Graph(ctx, "enc"); !errors.Is(err, kilolock.ErrEncrypted) || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("Graph = %v, want ErrEncrypted", err)
	}
	s, err := e.Status(ctx, "enc")
	if err != nil || !s.Encrypted || s.Version.Format != kilolock.FormatOpaque {
		t.Fatalf("Status = %+v, %v; want an encrypted opaque version", s, err)
	}
	res, err := e.Query(ctx, "SELECT COUNT(*) AS n FROM resources WHERE state = 'enc'")
	if err != nil || fmt.Sprint(res.Rows[0][0]) != "0" {
		t.Fatalf("resources of an encrypted state = %v, %v; want none", res, err)
	}
}
