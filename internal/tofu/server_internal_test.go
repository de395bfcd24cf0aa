package tofu

import (
	"os/exec"
	"strings"
	"testing"
)

// TestListenURLBesideStderr: kld's URL line is found even when the runtime
// writes to stderr in pieces around it (GODEBUG=gctrace=1 does), as the
// memory benchmark runs kld; on one shared pipe the URL landed inside a
// trace line and the start timed out.
func TestListenURLBesideStderr(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	s := &Server{log: &syncBuffer{}, stdout: &syncBuffer{}}
	cmd := exec.Command("sh", "-c", `printf 'gc 1 @0.011s 1%%: ' >&2; sleep 0.1; echo http://127.0.0.1:4321; sleep 0.1; echo '1->2->0 MB' >&2`)
	s.attach(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	scheme, addr, ok := s.listenURL()
	if !ok || scheme != "http" || addr != "127.0.0.1:4321" {
		t.Fatalf("listenURL = %q, %q, %v; want http, 127.0.0.1:4321", scheme, addr, ok)
	}
	for _, want := range []string{"gc 1 @0.011s", "http://127.0.0.1:4321", "1->2->0 MB"} {
		if !strings.Contains(s.Log(), want) {
			t.Errorf("the log lacks %q:\n%s", want, s.Log())
		}
	}
}
