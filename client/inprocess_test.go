package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
)

// stateJSON is a Terraform state with one resource whose id is id.
func stateJSON(lineage string, serial int, id string) []byte {
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.9.0","serial":%d,"lineage":%q,"outputs":{"id":{"value":%q,"type":"string"}},"resources":[{"mode":"managed","type":"terraform_data","name":"a","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":%q},"dependencies":[]}]}]}`, serial, lineage, id, id)
}

func TestInProcessServesKLD(t *testing.T) {
	ctx := context.Background()
	c := inProcess(t, newKLD(t, httpbackend.Options{}))

	info := kilolock.LockInfo{ID: "lock-1", Operation: "OperationTypeApply", Who: "alice@ci", Version: "1.9.0", Created: time.Now().UTC()}
	if _, err := c.Lock(ctx, "app", info, ""); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	w, err := c.PutState(ctx, "app", "lock-1", stateJSON("l-1", 1, "one"))
	if err != nil {
		t.Fatalf("PutState: %v", err)
	}
	if w.Version != 1 || w.Serial != 1 || w.Added != 1 {
		t.Fatalf("PutState answered %+v, want version 1, serial 1, one instance added", w)
	}

	// A second writer meets the holder, as a typed root error with the
	// server's hint.
	other := info
	other.ID, other.Who = "lock-2", "bob@laptop"
	_, err = c.Lock(ctx, "app", other, "")
	var locked *kilolock.LockedError
	if !errors.Is(err, kilolock.ErrLocked) || !errors.As(err, &locked) || locked.Holder.ID != "lock-1" || locked.Holder.Who != "alice@ci" {
		t.Fatalf("second Lock: %v (%#v), want ErrLocked held by lock-1 of alice@ci", err, locked)
	}
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusLocked || ce.Hint() == "" || ce.Body.RequestID == "" {
		t.Fatalf("second Lock: %#v, want a 423 *client.Error with a hint and a request id", ce)
	}

	if _, err := c.Unlock(ctx, "app", info); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	f, err := c.State(ctx, "app")
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 1 || f.Serial != 1 || !bytes.Contains(got, []byte(`"lineage": "l-1"`)) && !bytes.Contains(got, []byte(`"lineage":"l-1"`)) {
		t.Fatalf("State: version %d serial %d body %s, want version 1 serial 1 of lineage l-1", f.Version, f.Serial, got)
	}
	if _, err := c.State(ctx, "nothing-here"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("State of a missing state: %v, want ErrNotFound", err)
	}
}

// TestInProcessStreams proves the answer reaches the caller while the
// handler still writes: the handler waits for the caller to have read its
// first chunk before it writes the second, which a buffering transport
// would never return.
func TestInProcessStreams(t *testing.T) {
	read := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		w.Write([]byte("first;"))
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			return // the test fails below: it never saw the first chunk
		}
		w.Write([]byte("second"))
	})
	hc := &http.Client{Transport: client.InProcess(h)}
	resp, err := hc.Get("http://kld.invalid/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Test") != "yes" {
		t.Fatalf("status %d header %v", resp.StatusCode, resp.Header)
	}
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first;" {
		t.Fatalf("first chunk %q, %v", first, err)
	}
	close(read)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "second" {
		t.Fatalf("rest %q, %v; want the second chunk written after the first was read", rest, err)
	}
}

// A handler that gives up mid-answer (http.ErrAbortHandler) cuts the body,
// as a socket would: the reader gets an error, not a short body.
func TestInProcessAbortCutsTheBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"partial":`))
		panic(http.ErrAbortHandler)
	})
	resp, err := (&http.Client{Transport: client.InProcess(h)}).Get("http://kld.invalid/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading an aborted answer: %v, want io.ErrUnexpectedEOF", err)
	}
}

// A caller that stops reading and closes the body stops the handler's
// writes, rather than leaving it blocked.
func TestInProcessCloseStopsTheHandler(t *testing.T) {
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 1<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	})
	resp, err := (&http.Client{Transport: client.InProcess(h)}).Get("http://kld.invalid/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("handler's write after close: %v, want io.ErrClosedPipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler still writes after the caller closed the body")
	}
}

// WithTimeout bounds a call in process too: a handler that never answers
// ends the call with the deadline, and sees its context end.
func TestInProcessTimeout(t *testing.T) {
	stopped := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(stopped)
	})
	c, err := client.New("http://kld.invalid", client.WithTransport(client.InProcess(h)), client.WithTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Health(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Health of a handler that never answers: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %v past a 100ms timeout", d)
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end")
	}
}

// TestVersionNumber: @N is taken as it is, latest from the status (not
// found before the first write), a serial or @-K by the server.
func TestVersionNumber(t *testing.T) {
	ctx := context.Background()
	c := inProcess(t, newKLD(t, httpbackend.Options{}))
	if _, err := c.VersionNumber(ctx, "app", kilolock.Latest); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("latest of a state never written: %v, want ErrNotFound", err)
	}
	info := kilolock.LockInfo{ID: "lock-1", Operation: "OperationTypeApply", Who: "alice@ci", Version: "1.9.0", Created: time.Now().UTC()}
	if _, err := c.Lock(ctx, "app", info, ""); err != nil {
		t.Fatal(err)
	}
	for serial, id := range []string{"one", "two", "three"} {
		if _, err := c.PutState(ctx, "app", "lock-1", stateJSON("l-1", 10+serial, id)); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]int64{"@latest": 3, "@2": 2, "@9": 9, "@-2": 1, "serial:11": 2} {
		r, err := kilolock.ParseVersionRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.VersionNumber(ctx, "app", r); err != nil || got != want {
			t.Errorf("VersionNumber(%s) = %d, %v; want %d", ref, got, err, want)
		}
	}
}
