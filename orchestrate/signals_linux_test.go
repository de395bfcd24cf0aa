package orchestrate

import (
	"os"
	"testing"
)

// TestReaderGone: SignalContext tells a pipe whose reader went away (the
// SIGPIPE of `kl … | head`, which stops the CLI) from one still read, and
// from a file.
func TestReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if readerGone(int(w.Fd()), int(f.Fd())) {
		t.Fatal("readerGone of a pipe still read and a file = true")
	}
	r.Close()
	if !readerGone(int(f.Fd()), int(w.Fd())) {
		t.Fatal("readerGone of a pipe whose reader closed = false")
	}
}
