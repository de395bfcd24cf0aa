package httpbackend

import (
	"net"
	"sync"
	"time"
)

// Anonymous denials (no credentials, an unknown token, the local lane on
// an authenticated server) cost nothing to send, so their audit rows are
// bounded per remote host: at most anonymousAuditBurst a minute each. The
// rest are still logged, marked audited=false, and counted.
const (
	anonymousAuditBurst  = 60
	anonymousAuditWindow = time.Minute
	anonymousAuditHosts  = 10000 // hosts tracked before old windows are dropped
)

// auditLimiter counts anonymous denials per remote host and window.
type auditLimiter struct {
	mu    sync.Mutex
	hosts map[string]*auditWindow
}

type auditWindow struct {
	start time.Time
	n     int
}

func newAuditLimiter() *auditLimiter { return &auditLimiter{hosts: make(map[string]*auditWindow)} }

// allow reports whether an anonymous denial from remoteAddr at now may
// write an audit row.
func (l *auditLimiter) allow(remoteAddr string, now time.Time) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.hosts[host]
	if w == nil || now.Sub(w.start) >= anonymousAuditWindow {
		if w == nil && len(l.hosts) >= anonymousAuditHosts {
			for h, old := range l.hosts {
				if now.Sub(old.start) >= anonymousAuditWindow {
					delete(l.hosts, h)
				}
			}
			if len(l.hosts) >= anonymousAuditHosts {
				return false // a flood from many hosts: log only
			}
		}
		w = &auditWindow{start: now}
		l.hosts[host] = w
	}
	w.n++
	return w.n <= anonymousAuditBurst
}
