package kldconfig

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/charmbracelet/log"
)

// Profiling is the flag that serves Go's profiles of kld, to find where a
// kld under load spends its time and memory (go tool pprof).
type Profiling struct {
	PprofListen string `name:"pprof-listen" env:"KL_PPROF_LISTEN" placeholder:"HOST:PORT" help:"Serve Go's profiles (net/http/pprof: /debug/pprof/profile, heap, allocs, goroutine…) on this address, e.g. 127.0.0.1:6060, apart from the state API and without its authentication: keep it on a loopback or private address. Off by default; without it kld does not sample its allocations for the heap profile (about 2% of its CPU under writes)."`
}

// Apply sets what profiling costs while kld serves: without --pprof-listen
// nobody can read the heap profile, so the runtime's sampling of
// allocations for it (a stack walk every 512 KiB allocated, and each
// request body is a few hundred KiB) is turned off.
func (p *Profiling) Apply() {
	if p.PprofListen == "" {
		runtime.MemProfileRate = 0
	}
}

// Serve serves the profiles on --pprof-listen until ctx ends; without
// the flag it returns at once. An address it cannot listen on is logged
// as an error: kld serves on without profiles.
func (p *Profiling) Serve(ctx context.Context, logger *log.Logger) {
	if p.PprofListen == "" {
		return
	}
	ln, err := net.Listen("tcp", p.PprofListen)
	if err != nil {
		logger.Error("--pprof-listen: serving no profiles", "err", err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	logger.Warn("serving Go's profiles: keep this address private", "pprof_addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("profiles", "err", err)
	}
}
