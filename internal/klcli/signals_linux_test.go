package klcli

import (
	"os"
	"testing"
)

// TestReaderGone: kl tells a pipe whose reader went away (the SIGPIPE of
// `kl … | head`, which stops the CLI) from one still read, and from a
// file; its output path drops what the gone reader would have read
// rather than fail the copy of the CLI's output.
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
	if n, err := escaped(w).Write([]byte("plan line\n")); n != 10 || err != nil {
		t.Errorf("writing to a gone reader through kl's output = %d, %v; want the line dropped (10, nil)", n, err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Error("a raw write to the gone reader succeeded: the test saw no EPIPE")
	}
}
