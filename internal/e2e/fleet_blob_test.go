package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// blobServer is the trivial HTTP state backend the fleet benchmark
// measures kld against: each state's bytes in a map behind one mutex, one
// lock per state, nothing parsed, nothing kept but the last bytes. What
// kld costs beyond it is the price of history, merges and a database.
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
