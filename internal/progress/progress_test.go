package progress

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestTerminal(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out)
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	term.now = func() time.Time { return clock }
	step := term.Start("upload", 4<<20, Bytes)
	r := step.Reader(bytes.NewReader(make([]byte, 4<<20)))
	buf := make([]byte, 1<<20)
	for {
		clock = clock.Add(150 * time.Millisecond) // past the interval: each read redraws
		if _, err := r.Read(buf); err == io.EOF {
			break
		}
	}
	step.Done()
	step.Done() // once only
	got := out.String()
	for _, want := range []string{"\r\x1b[Kupload  0 B / 4.0 MiB  0%", "upload  1.0 MiB / 4.0 MiB  25%", "upload  4.0 MiB / 4.0 MiB  100%  800ms\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 1 {
		t.Errorf("%d final lines, want 1", n)
	}

	out.Reset()
	items := term.Start("drift check", 0, Items)
	clock = clock.Add(time.Second)
	items.Add(42)
	items.Done()
	if got := out.String(); !strings.HasSuffix(got, "drift check  42  1s\n") {
		t.Errorf("a step of unknown total: %q", got)
	}
}

func TestTerminalThrottles(t *testing.T) {
	var out bytes.Buffer
	term := NewTerminal(&out)
	step := term.Start("x", 1000, Items)
	for range 1000 {
		step.Add(1) // all within one interval
	}
	if n := strings.Count(out.String(), "\r"); n > 2 {
		t.Errorf("redrew %d times within one interval", n)
	}
}

// TestAutoIsSilentOffTerminals: a pipe, a file or --json shows nothing.
func TestAutoIsSilentOffTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, rep := range map[string]Reporter{"pipe": Auto(w, false), "file": Auto(f, false), "json": Auto(w, true), "nil": Auto(nil, false)} {
		if rep != Silent {
			t.Errorf("%s: %T, want Silent", name, rep)
		}
	}
	if From(context.Background()) != Silent {
		t.Error("a context without a reporter does not give Silent")
	}
	term := NewTerminal(io.Discard)
	if From(With(context.Background(), term)) != term {
		t.Error("With/From lose the reporter")
	}
}
