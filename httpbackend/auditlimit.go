package httpbackend

import (
	"net"
	"sync"
	"time"
)

// Denials are cheap to send and each would write an audit row, so the rows
// are bounded: anonymous denials (no credentials, an unknown token, the
// local lane on an authenticated server) at most anonymousAuditBurst a
// minute per remote host, denials of an identified credential (a read-only
// token writing, a PAT without a grant) at most identifiedAuditBurst a
// minute per credential. The rest are still logged, marked audited=false,
// and counted (kl_auth_denials_unaudited_total).
const (
	anonymousAuditBurst  = 60
	identifiedAuditBurst = 60
	auditWindow          = time.Minute
	auditKeys            = 10000 // hosts or credentials tracked before old windows are dropped
)

// auditLimiter counts denials per key (a remote host, a credential) and
// window.
type auditLimiter struct {
	burst int
	mu    sync.Mutex
	keys  map[string]*auditCount
}

type auditCount struct {
	start time.Time
	n     int
}

func newAuditLimiter(burst int) *auditLimiter {
	return &auditLimiter{burst: burst, keys: make(map[string]*auditCount)}
}

// allowHost reports whether an anonymous denial from remoteAddr at now may
// write an audit row.
func (l *auditLimiter) allowHost(remoteAddr string, now time.Time) bool {
	return l.allow(remoteHost(remoteAddr), now)
}

// remoteHost is the host of a request's RemoteAddr (host:port).
func remoteHost(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// allow reports whether a denial counted under key at now may write an
// audit row.
func (l *auditLimiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[key]
	if w == nil || now.Sub(w.start) >= auditWindow {
		if w == nil && len(l.keys) >= auditKeys {
			for k, old := range l.keys {
				if now.Sub(old.start) >= auditWindow {
					delete(l.keys, k)
				}
			}
			if len(l.keys) >= auditKeys {
				return false // a flood from many keys: log only
			}
		}
		w = &auditCount{start: now}
		l.keys[key] = w
	}
	w.n++
	return w.n <= l.burst
}
