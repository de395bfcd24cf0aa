package klcli

import (
	"os"
	"testing"
)

// TestOutputToGoneReader: kl's output path drops what a reader that went
// away (`kl … | head`) would have read rather than fail the copy of the
// CLI's output.
func TestOutputToGoneReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	if n, err := escaped(w).Write([]byte("plan line\n")); n != 10 || err != nil {
		t.Errorf("writing to a gone reader through kl's output = %d, %v; want the line dropped (10, nil)", n, err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Error("a raw write to the gone reader succeeded: the test saw no EPIPE")
	}
}
