package e2e_test

import (
	"bufio"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// blobServer is the trivial HTTP state backend the fleet benchmark
// measures kld against: each state's bytes in a map behind one mutex, one
// lock per state, nothing parsed, nothing kept but the last bytes. It
// checks a body's Content-MD5, as the protocol asks of a backend (both
// CLIs send one) and kld does. What kld costs beyond it is the price of
// history, merges and a database.
type blobServer struct {
	mu    sync.Mutex
	docs  map[string][]byte
	locks map[string]string // state → lock ID
}

func newBlobServer() *blobServer {
	return &blobServer{docs: map[string][]byte{}, locks: map[string]string{}}
}

func (s *blobServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/v1/states/")
	if !ok || name == "" {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case "GET":
		s.mu.Lock()
		doc, ok := s.docs[name]
		s.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Write(doc)
	case "POST":
		doc, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if want := r.Header.Get("Content-MD5"); want != "" {
			sum := md5.Sum(doc)
			if got := base64.StdEncoding.EncodeToString(sum[:]); got != want {
				http.Error(w, "the body's MD5 is "+got+", not "+want, http.StatusBadRequest)
				return
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if held := s.locks[name]; held != "" && held != r.URL.Query().Get("ID") {
			http.Error(w, "locked by "+held, http.StatusConflict)
			return
		}
		s.docs[name] = doc
	case "LOCK", "UNLOCK":
		var info struct{ ID string }
		if err := json.NewDecoder(r.Body).Decode(&info); err != nil || info.ID == "" {
			http.Error(w, "no lock info", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		held := s.locks[name]
		switch {
		case r.Method == "LOCK" && held != "" && held != info.ID:
			w.WriteHeader(http.StatusLocked)
			json.NewEncoder(w).Encode(map[string]string{"ID": held})
		case r.Method == "LOCK":
			s.locks[name] = info.ID
		case held != "" && held != info.ID:
			http.Error(w, "locked by "+held, http.StatusConflict)
		default:
			delete(s.locks, name)
		}
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// blobServeEnv, set in the environment of the test binary, makes it serve
// the blob server (see serveBlob) instead of running tests.
const blobServeEnv = "KL_FLEET_BLOB_SERVE"

// serveBlob serves a blobServer on a port of the loopback, its URL the
// first line on stdout, until stdin closes; then it exits.
func serveBlob() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	err = http.Serve(ln, newBlobServer())
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// blobProcess is the blob server in a process of its own, as kld is: its
// CPU time is then its own, and the benchmark's client has the same heap
// (and collects as often) against either server.
type blobProcess struct {
	URL string
	cmd *exec.Cmd
}

// startBlob runs the test binary as a blob server, stopped when tb ends.
func startBlob(tb testing.TB) *blobProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), blobServeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the blob server printed no URL: %v", err)
	}
	return &blobProcess{URL: strings.TrimSpace(line), cmd: cmd}
}

// PID is the blob server's process id.
func (p *blobProcess) PID() int { return p.cmd.Process.Pid }
