package tofu

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running kld.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT (https:// when started
	// with --tls-cert), without a trailing slash.
	URL string
	// Addr is its listen address, 127.0.0.1:PORT.
	Addr string
	// DatabaseURL is the --database it was started with.
	DatabaseURL string

	tb  testing.TB
	cmd *exec.Cmd
	log *syncBuffer
	// stdout is kld's stdout alone, where its URL line is looked for: on
	// the log, the runtime's own writes to stderr (GODEBUG=gctrace=1)
	// may cut into it.
	stdout *syncBuffer
	done   chan struct{} // closed when the process has exited
	err    error         // its exit status, set before done is closed

	ready    atomic.Bool // set when WaitReady succeeded
	stopOnce sync.Once
	stopErr  error
}

// ReadyTimeout bounds how long StartKLD waits for /readyz (PostgreSQL
// migrations included).
const ReadyTimeout = time.Minute

// StartKLD builds cmd/kld (once per test binary), starts it with
// --listen 127.0.0.1:0 (kld picks a free port and prints its URL),
// --database databaseURL and any extra args (e.g. "--log-level=debug"), and
// waits until GET /readyz answers 200. It stops kld with SIGTERM when tb ends
// and fails tb when kld does not exit cleanly; when tb failed, it logs what
// kld logged.
func StartKLD(tb testing.TB, databaseURL string, args ...string) *Server {
	tb.Helper()
	return StartKLDEnv(tb, nil, databaseURL, args...)
}

// StartKLDEnv is StartKLD with env ("NAME=value" entries, such as
// GODEBUG=gctrace=1) added to kld's environment.
func StartKLDEnv(tb testing.TB, env []string, databaseURL string, args ...string) *Server {
	tb.Helper()
	argv := append([]string{"--listen", "127.0.0.1:0", "--database", databaseURL}, args...)
	cmd := exec.Command(BuildKLD(tb), argv...)
	// A developer's KL_* settings must not change what the test runs.
	cmd.Env = append(CleanEnv("KL_"), env...)
	return StartCommand(tb, cmd, databaseURL)
}

// StartCommand is StartKLD of a kld command line the caller made (another
// kld binary, a root directory of its own, an environment of its own),
// which must listen on a port 0 of 127.0.0.1 so that kld prints its URL.
func StartCommand(tb testing.TB, cmd *exec.Cmd, databaseURL string) *Server {
	tb.Helper()
	s := Launch(tb, cmd, databaseURL)
	if err := s.WaitReady(); err != nil {
		tb.Fatalf("start kld: %v\nkld %s\nkld log:\n%s", err, strings.Join(cmd.Args[1:], " "), s.Log())
	}
	return s
}

// Launch starts cmd as StartCommand does, but returns at once, for a test
// that starts several kld together; WaitReady then waits for each. It
// stops kld with SIGTERM when tb ends, and fails tb when kld does not exit
// cleanly from a start that was ready.
func Launch(tb testing.TB, cmd *exec.Cmd, databaseURL string) *Server {
	tb.Helper()
	s := &Server{
		DatabaseURL: databaseURL,
		tb:          tb,
		cmd:         cmd,
		log:         &syncBuffer{},
		stdout:      &syncBuffer{},
		done:        make(chan struct{}),
	}
	s.attach(s.cmd)
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("start kld: %v", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	tb.Cleanup(func() {
		if !s.ready.Load() {
			s.kill()
			return
		}
		if err := s.Stop(); err != nil {
			tb.Errorf("kld on %s: %v\nkld log:\n%s", s.Addr, err, s.Log())
		} else if tb.Failed() {
			tb.Logf("kld on %s log:\n%s", s.Addr, s.Log())
		}
	})
	return s
}

// listenLine is what kld prints on stdout when asked for port 0.
var listenLine = regexp.MustCompile(`(?m)^(https?)://(127\.0\.0\.1:[0-9]+)$`)

// attach sends cmd's stdout and stderr to the log, and its stdout to
// s.stdout too: two pipes, so that no write to stderr lands inside a line
// of stdout.
func (s *Server) attach(cmd *exec.Cmd) {
	cmd.Stdout, cmd.Stderr = io.MultiWriter(s.log, s.stdout), s.log
}

// listenURL finds kld's URL line on its stdout.
func (s *Server) listenURL() (scheme, addr string, ok bool) {
	m := listenLine.FindStringSubmatch(s.stdout.String())
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// WaitReady waits, up to ReadyTimeout, until kld has printed its URL and
// GET /readyz answers 200. On failure, kld is killed.
func (s *Server) WaitReady() error {
	err := s.waitReady()
	if err != nil {
		s.kill()
		return err
	}
	s.ready.Store(true)
	return nil
}

func (s *Server) waitReady() error {
	// Readiness only: a kld serving HTTPS (--tls-cert) is probed without
	// checking its certificate; the tests that start one check it with the
	// client under test.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(ReadyTimeout)
	var last string
	for {
		select {
		case <-s.done:
			return fmt.Errorf("kld exited before it was ready: %v", s.err)
		default:
		}
		if s.URL == "" {
			if scheme, addr, ok := s.listenURL(); ok {
				s.Addr, s.URL = addr, scheme+"://"+addr
			} else {
				last = "kld has not printed its URL"
			}
		}
		if s.URL != "" {
			resp, err := client.Get(s.URL + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				last = resp.Status
			} else {
				last = err.Error()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kld not ready after %s: /readyz: %s", ReadyTimeout, last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// StopTimeout bounds a graceful shutdown.
const StopTimeout = 15 * time.Second

// Stop sends kld SIGTERM and waits for it to exit. It returns an error when
// kld did not exit within StopTimeout (it is then killed) or exited with a
// non-zero status. Later calls return the first result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			s.stopErr = fmt.Errorf("kld had already exited: %v", s.err)
			return
		default:
		}
		if err := terminate(s.cmd.Process); err != nil {
			s.stopErr = fmt.Errorf("send SIGTERM: %w", err)
			s.kill()
			return
		}
		select {
		case <-s.done:
			if s.err != nil {
				s.stopErr = fmt.Errorf("kld exited with %v after SIGTERM", s.err)
			}
		case <-time.After(StopTimeout):
			s.kill()
			s.stopErr = fmt.Errorf("kld did not exit within %s of SIGTERM; killed", StopTimeout)
		}
	})
	return s.stopErr
}

func (s *Server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// Exited reports whether the kld process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// PID is the kld process's id, e.g. to read its /proc/PID/status.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Log returns everything kld has printed so far, stdout and stderr.
func (s *Server) Log() string { return s.log.String() }

// WaitLog waits until kld has logged substr and reports whether it did
// within timeout.
func (s *Server) WaitLog(ctx context.Context, substr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if strings.Contains(s.Log(), substr) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StateURL returns the address of state name: URL/v1/states/name.
func (s *Server) StateURL(name string) string { return s.URL + "/v1/states/" + name }

// Backend returns the terraform block a user writes to keep state name on
// this server.
func (s *Server) Backend(name string) string { return s.BackendWith(name, "") }

// BackendWith is Backend with more attributes of the http backend (lines
// such as credentials, headers or a CA) inside its block.
func (s *Server) BackendWith(name, attrs string) string {
	return fmt.Sprintf(`terraform {
  backend "http" {
    address        = %[1]q
    lock_address   = %[1]q
    unlock_address = %[1]q
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
%[2]s  }
}
`, s.StateURL(name), attrs)
}

// syncBuffer is a bytes.Buffer safe for one writer process and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
