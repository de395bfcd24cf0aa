package httpbackend

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kilolock/kilolock"
)

// Defaults of the Options that bound request bodies.
const (
	// DefaultBodyIdleTimeout is how long a body may pause, and how long
	// its first bytes may take.
	DefaultBodyIdleTimeout = 15 * time.Second
	// DefaultBodyMinRate is the average rate, in bytes a second, a body
	// must keep after its first DefaultBodyIdleTimeout: 1 Mbit/s, so that
	// a 13 MB state may take 100 s, and a client that stalls after sending
	// half of a body holds its memory for seconds, not minutes.
	DefaultBodyMinRate int64 = 128 << 10
)

// firstBodyChunk is the most read into a body's first buffer: a body gets
// memory as its bytes arrive (the buffer doubles when full), never because
// its Content-Length announces them.
const firstBodyChunk = 32 << 10

// A body of announced size from spoolMinBody bytes on (a large state) is,
// once its first chunk has arrived, read on into a file (a
// kilolock.Spool), spoolBuffer bytes at a time, and handed on as a
// read-only mapping of that file, where the platform has it: it takes no
// heap, nothing is copied into memory that stays, and the engine gives its
// pages back behind each pass it makes over it (kilolock.WriteOptions.Done),
// so that a POST of any size holds a few megabytes of it at once. The
// budget is taken spoolStep bytes at a time ahead of its bytes, as for a
// body in memory, and given back with the file when the engine is done
// with it (a POST's, before the store writes the version; see
// kilolock.WriteOptions.Release) or the request ends. The request's
// handler must not keep the body (nor anything that refers into it) past
// then; the engine keeps none of it.
const (
	spoolMinBody = 1 << 20
	spoolStep    = 2 << 20
	spoolBuffer  = 256 << 10
	// freeBeforeSpool is the size from which a body is spooled only
	// after the heap has given its free pages back to the system (a
	// forced collection: a few milliseconds against the 100 ms and more
	// such a POST takes). Measured with internal/e2e BenchmarkKLDMemory
	// serving a 134 MiB state: peak RSS 394-407 MiB before, 379-380 after.
	freeBeforeSpool = 16 << 20
)

// bodyBudget bounds the bytes of request bodies held at once, across all
// requests: the capacity of their buffers, from the first byte read until
// the request ends. One credential's bodies hold at most share of it, so
// that its stalled or slow uploads, however many connections they take,
// leave the rest to other clients.
type bodyBudget struct {
	limit int64
	share int64
	held  atomic.Int64 // read by the metrics without the lock
	count atomic.Int64 // bodies being read
	mu    sync.Mutex
	by    map[string]int64 // what each credential's bodies hold; none at 0
}

// stats is what the metrics read of b: the bytes held, the budget, and
// the bodies being read.
func (b *bodyBudget) stats() (held, limit, reading int64) {
	return b.held.Load(), b.limit, b.count.Load()
}

// newBodyBudget returns the budget of limit bytes whose credentials each
// hold at most half of it, and never less than one body of bodyLimit.
func newBodyBudget(limit, bodyLimit int64) *bodyBudget {
	return &bodyBudget{limit: limit, share: max(limit/2, bodyLimit), by: map[string]int64{}}
}

// Why a take is refused.
const (
	budgetFull  = "body_memory_full"  // all of the budget is held
	budgetShare = "body_memory_share" // the credential's share is
)

// take reserves n bytes for the bodies of credential key ("" for a
// caller known by no credential, held to the whole budget alone). It
// returns "" or why not.
func (b *bodyBudget) take(key string, n int64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.held.Load()+n > b.limit:
		return budgetFull
	case key != "" && b.by[key]+n > b.share:
		return budgetShare
	}
	b.held.Add(n)
	if key != "" {
		b.by[key] += n
	}
	return ""
}

// give returns n bytes key took.
func (b *bodyBudget) give(key string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held.Add(-n)
	if key != "" {
		if b.by[key] -= n; b.by[key] <= 0 {
			delete(b.by, key)
		}
	}
}

// budgetKey is whom the request's bodies count against: its credential
// once the authenticated lane knows it, else (a request whose token is
// unknown) its client's address; "" on an open server (--auth=none),
// where no caller is told from another.
func (h *Handler) budgetKey(ri *reqInfo) string {
	switch {
	case ri.actor != "":
		return "credential " + ri.actor
	case h.auth == AuthToken:
		return "host " + ri.host
	}
	return ""
}

// releaseBodies gives back what the request's bodies held.
func (h *Handler) releaseBodies(ri *reqInfo) {
	h.bodies.give(ri.bodyKey, ri.bodyBytes)
	ri.bodyBytes = 0
	for _, sp := range ri.spooled {
		if sp.mapped != nil {
			if err := unmapSpool(sp.mapped); err != nil {
				h.log.Error("unmapping a request body failed", "request_id", ri.id, "err", err)
			}
		}
		if sp.file.Taken() {
			continue // the engine's now
		}
		if err := sp.file.Close(); err != nil {
			h.log.Error("closing a request body's spool failed", "request_id", ri.id, "err", err)
		}
	}
	ri.spooled = nil
}

// spooledBody is a request body in a file, and its mapping once read.
type spooledBody struct {
	file   *kilolock.Spool
	mapped []byte
}

// spoolOf returns the spooled body whose mapping body is, or nil.
func spoolOf(ri *reqInfo, body []byte) *spooledBody {
	for _, sp := range ri.spooled {
		if len(sp.mapped) > 0 && len(body) == len(sp.mapped) && &sp.mapped[0] == &body[0] {
			return sp
		}
	}
	return nil
}

// bodyDone returns what tells the engine's reads of body to give back its
// pages (kilolock.WriteOptions.Done): nil unless body is a spooled body's
// mapping.
func bodyDone(ri *reqInfo, body []byte) func(from, to int) {
	if sp := spoolOf(ri, body); sp != nil {
		m := sp.mapped
		return func(from, to int) { forgetPages(m, from, to) }
	}
	return nil
}

// bodySpool returns the Spool body maps (kilolock.WriteOptions.Spool),
// or nil. Once the engine took it over, the request's end unmaps it but
// leaves the file open.
func bodySpool(ri *reqInfo, body []byte) *kilolock.Spool {
	if sp := spoolOf(ri, body); sp != nil {
		return sp.file
	}
	return nil
}

// readBody reads a request body of at most limit bytes. Memory is taken as
// the bytes arrive, from the budget shared by all requests (503 with
// Retry-After when it is spent), and the body must keep arriving (408 when
// it pauses longer than the idle timeout or falls below the minimum rate).
// Past the limit it answers 413 with a hint naming the server flag that
// raises it.
func (h *Handler) readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, h.tooLarge(limit)
	}
	ri := info(r)
	body := http.MaxBytesReader(ri.w, r.Body, limit)
	most := r.ContentLength // what the buffer may have to hold
	if most < 0 {
		most = limit
	}
	h.bodies.count.Add(1)
	defer h.bodies.count.Add(-1)
	clock := h.startBodyClock(ri.w, r)
	defer clock.stop()

	b := bodyBuffer{h: h, ri: ri, size: r.ContentLength}
	for {
		if b.full() {
			if b.received() >= most {
				// Full: nothing may follow.
				var one [1]byte
				clock.next(b.received())
				n, err := body.Read(one[:])
				switch {
				case n > 0 && r.ContentLength >= 0:
					return nil, &httpError{status: http.StatusBadRequest, code: "body_unreadable", message: "the request body is longer than its Content-Length", hint: "send the body again with its own length; nothing was stored"}
				case err == io.EOF:
					return b.bytes()
				case err != nil:
					return nil, h.bodyError(ri, err, limit, b.received(), clock)
				}
				continue // a zero-byte read
			}
			if err := b.grow(most); err != nil {
				return nil, err
			}
		}
		clock.next(b.received())
		n, err := body.Read(b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		switch {
		case err == io.EOF && r.ContentLength > b.received():
			return nil, &httpError{status: http.StatusBadRequest, code: "body_unreadable",
				message: fmt.Sprintf("the request body ended after %d of the %d bytes its Content-Length announces", b.received(), r.ContentLength),
				hint:    "send the body again; nothing was stored"}
		case err == io.EOF:
			return b.bytes()
		case err != nil:
			return nil, h.bodyError(ri, err, limit, b.received(), clock)
		}
	}
}

// bodyBuffer is the memory of one body, taken from the budget as its bytes
// arrive, so that it never holds more than twice what arrived. A body of
// announced size is read into chunks of doubling size until half of it has
// arrived, then into one buffer of its size, into which the chunks are
// copied once (half the copying of a buffer that doubles); a body of no
// announced size, into a buffer that doubles; a large body of announced
// size, into a file (see spoolMinBody).
type bodyBuffer struct {
	h      *Handler
	ri     *reqInfo
	size   int64    // the announced size; -1 when none
	buf    []byte   // being read into, up to its capacity
	chunks [][]byte // full chunks before buf
	inCh   int64    // bytes in chunks
	pooled [][]byte // the memory of chunks (and buf) from bodyChunks
	spool  *spooledBody
	inFile int64 // bytes written to spool
	taken  int64 // budget taken for a spooled body
}

func (b *bodyBuffer) received() int64 { return b.inCh + b.inFile + int64(len(b.buf)) }
func (b *bodyBuffer) full() bool      { return len(b.buf) == cap(b.buf) }

// grow makes room for the next bytes of a body of at most most bytes; the
// budget's refusal (503, or 429 for the credential's share) when it has
// none.
func (b *bodyBuffer) grow(most int64) error {
	got, half := b.received(), (b.size+1)/2
	if b.spool == nil && b.inCh == 0 && got > 0 && b.size >= spoolMinBody && b.spoolStart() {
		// Its first chunk arrived (and is full): on into a file, where
		// the chunk's budget goes with its bytes.
		b.taken = int64(cap(b.buf))
	}
	if b.spool != nil {
		if err := b.flush(); err != nil {
			return err
		}
		// The budget for its next bytes, and room for them: never past
		// its announced end, so that a byte more is seen as one.
		room := min(int64(spoolBuffer), b.size-got)
		if need := got + room - b.taken; need > 0 {
			step := min(max(need, spoolStep), b.size-b.taken)
			if err := b.take(step); err != nil {
				return err
			}
			b.taken += step
		}
		if int64(cap(b.buf)) < room {
			b.buf = make([]byte, 0, room)
		}
		b.buf = b.buf[:0:room]
		return nil
	}
	switch {
	case b.size >= 0 && (b.size <= firstBodyChunk || got >= half):
		// Small, or half of it arrived: its own buffer.
		b.give(b.inCh) // the chunks are garbage once copied
		if err := b.take(b.size); err != nil {
			return err
		}
		whole := make([]byte, got, b.size)
		at := 0
		for _, c := range b.chunks {
			at += copy(whole[at:], c)
		}
		copy(whole[at:], b.buf)
		b.buf, b.chunks, b.inCh = whole, nil, 0
		for _, c := range b.pooled {
			putChunk(c)
		}
		b.pooled = nil
	case b.size >= 0:
		next := min(max(2*int64(cap(b.buf)), firstBodyChunk), half-got)
		if err := b.take(next); err != nil {
			return err
		}
		if cap(b.buf) > 0 {
			b.chunks = append(b.chunks, b.buf)
			b.inCh += int64(len(b.buf))
		}
		var mem []byte
		b.buf, mem = getChunk(next)
		if mem != nil {
			b.pooled = append(b.pooled, mem)
		}
	default:
		next := min(most, max(2*int64(cap(b.buf)), firstBodyChunk))
		if err := b.take(next - int64(cap(b.buf))); err != nil {
			return err
		}
		grown := make([]byte, len(b.buf), next)
		copy(grown, b.buf)
		b.buf = grown
	}
	return nil
}

// bodyChunks hold the chunks bodies of announced size are read into
// until half of them arrived (see bodyBuffer), by size class: a chunk is
// garbage once copied into its body's own buffer, and allocating,
// zeroing and collecting them was a few percent of kld's CPU under a
// fleet of 0.4 MB states (internal/e2e BenchmarkKLDFleet's profile).
// Class c holds chunks of firstBodyChunk<<c bytes, up to half of
// spoolMinBody; a larger chunk (a body that is not spooled) is allocated
// as before. A chunk's bytes are only ever read up to what its body read
// into it.
var bodyChunks [chunkClasses]sync.Pool

const chunkClasses = 5 // 32 KiB to 512 KiB

// getChunk returns a buffer of capacity n to read into, and the memory to
// give back to putChunk once its bytes are copied (nil for none).
func getChunk(n int64) (buf, mem []byte) {
	c := 0
	for c < chunkClasses && int64(firstBodyChunk)<<c < n {
		c++
	}
	if c == chunkClasses {
		return make([]byte, 0, n), nil
	}
	if p, ok := bodyChunks[c].Get().(*[]byte); ok {
		mem = *p
	} else {
		mem = make([]byte, firstBodyChunk<<c)
	}
	return mem[:0:n], mem
}

// putChunk gives back the memory of a chunk getChunk returned.
func putChunk(mem []byte) {
	for c := range chunkClasses {
		if len(mem) == firstBodyChunk<<c {
			bodyChunks[c].Put(&mem)
			return
		}
	}
}

// spoolStart makes the file of a body of announced size, inside a request
// (whose end closes it); false when there is none to make here.
func (b *bodyBuffer) spoolStart() bool {
	if b.ri.w == nil || b.size > math.MaxInt || !canMapSpool {
		return false
	}
	if b.size >= freeBeforeSpool {
		// The heap keeps pages it freed for a while: give them back
		// first, so a large POST's peak is what it works on on top of
		// what is live, not of what was live before the last collection.
		debug.FreeOSMemory()
	}
	f, err := b.h.engine.SpoolFile()
	if err != nil {
		b.h.log.Warn("spooling a request body failed: reading it into memory", "request_id", b.ri.id, "err", err)
		return false
	}
	b.spool = &spooledBody{file: f}
	b.ri.spooled = append(b.ri.spooled, b.spool)
	return true
}

// flush writes what buf holds to the spool.
func (b *bodyBuffer) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	if _, err := b.spool.file.Write(b.buf); err != nil {
		b.h.log.Error("writing a request body to its spool failed", "request_id", b.ri.id, "err", err)
		b.ri.closeAfter()
		return &httpError{status: http.StatusServiceUnavailable, code: "spool_unavailable", retryAfter: true,
			message: "the server could not keep the request body in its spool directory",
			hint:    fmt.Sprintf("nothing was stored; retry in %d seconds (terraform and tofu retry a 503 by themselves); if it lasts, an operator should check the free space of kld --spool-dir (KL_SPOOL_DIR)", retryAfterSeconds)}
	}
	b.inFile += int64(len(b.buf))
	b.buf = b.buf[:0]
	return nil
}

// bytes returns the body read: buf, or a spooled body's mapping.
func (b *bodyBuffer) bytes() ([]byte, error) {
	if b.spool == nil {
		return b.buf, nil
	}
	if err := b.flush(); err != nil {
		return nil, err
	}
	m, err := mapSpool(b.spool.file.File, int(b.inFile))
	if err != nil {
		b.h.log.Error("mapping a spooled request body failed", "request_id", b.ri.id, "err", err)
		return nil, &httpError{status: http.StatusServiceUnavailable, code: "spool_unavailable", retryAfter: true,
			message: "the server could not read back the request body it spooled",
			hint:    fmt.Sprintf("nothing was stored; retry in %d seconds (terraform and tofu retry a 503 by themselves)", retryAfterSeconds)}
	}
	b.spool.mapped = m
	return m, nil
}

// take reserves n bytes of the budget for the request, counted against
// its credential; the answer to give when they do not fit. Once a body
// took some, its bytes stay counted against the key they were taken for.
func (b *bodyBuffer) take(n int64) error {
	h, ri := b.h, b.ri
	if ri.bodyBytes == 0 {
		ri.bodyKey = h.budgetKey(ri)
	}
	why := h.bodies.take(ri.bodyKey, n)
	if why == "" {
		ri.bodyBytes += n
		return nil
	}
	h.metrics.ObserveBodyRefusal(why)
	ri.closeAfter()
	if why == budgetShare {
		return &httpError{status: http.StatusTooManyRequests, code: budgetShare, retryAfter: true,
			message: fmt.Sprintf("the request bodies this credential is sending at once hold its share of the server's memory for them (%s of %s, kld --body-memory): this one does not fit now", ByteSize(h.bodies.share), ByteSize(h.bodies.limit)),
			hint:    fmt.Sprintf("nothing was stored; retry in %d seconds (terraform and tofu retry by themselves); finish or stop this credential's other uploads, or send them with another credential: each may hold half of kld --body-memory (KL_BODY_MEMORY)", retryAfterSeconds)}
	}
	return &httpError{status: http.StatusServiceUnavailable, code: budgetFull, retryAfter: true,
		message: fmt.Sprintf("the server holds as many request bodies as it may (%s, kld --body-memory): this one does not fit now", ByteSize(h.bodies.limit)),
		hint:    fmt.Sprintf("nothing was stored; retry in %d seconds (terraform and tofu retry a 503 by themselves); if it lasts, an operator can raise kld --body-memory (KL_BODY_MEMORY)", retryAfterSeconds)}
}

// give returns n bytes the request's bodies took.
func (b *bodyBuffer) give(n int64) {
	b.h.bodies.give(b.ri.bodyKey, n)
	b.ri.bodyBytes -= n
}

// bodyError translates the error of reading a body after received bytes.
func (h *Handler) bodyError(ri *reqInfo, err error, limit, received int64, clock *bodyClock) error {
	var (
		mbe *http.MaxBytesError
		he  *httpError
		ne  net.Error
	)
	switch {
	case errors.As(err, &he):
		return he // decided by an earlier read of the same body
	case errors.As(err, &mbe):
		return h.tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		h.metrics.ObserveBodyRefusal("body_timeout")
		ri.closeAfter()
		return &httpError{status: http.StatusRequestTimeout, code: "body_timeout",
			message: fmt.Sprintf("the request body arrived too slowly: %s in %s; the server waits at most %s for its next bytes and, after that long, needs %s a second on average",
				ByteSize(max(received, 1)), time.Since(clock.start).Round(time.Millisecond), clock.idle, ByteSize(clock.rate)),
			hint: "nothing was stored; send it again (a stalled or very slow link?)"}
	}
	return &httpError{status: http.StatusBadRequest, code: "body_unreadable", message: "the request body could not be read: " + err.Error(), hint: "send the body again; nothing was stored"}
}

// tooLarge is the 413 of a body over limit.
func (h *Handler) tooLarge(limit int64) error {
	h.metrics.ObserveBodyRefusal("body_too_large")
	e := &httpError{status: http.StatusRequestEntityTooLarge, code: "body_too_large",
		message: fmt.Sprintf("the request body is larger than the server's limit of %s", ByteSize(limit)),
		hint:    "nothing was stored; an operator can raise the limit with kld --body-limit (KL_BODY_LIMIT), e.g. --body-limit=256MiB"}
	if limit < h.bodyLimit {
		e.hint = "nothing was stored; this endpoint takes a small JSON document"
	}
	return e
}

// bodyClock sets the read deadline of a body before each read: its next
// bytes must come within the idle timeout, and by then it must have kept
// the minimum rate since the idle timeout after its start; never past the
// server's own ReadTimeout. Where the connection takes no deadline (a
// ResponseRecorder) it does nothing.
type bodyClock struct {
	rc    *http.ResponseController
	start time.Time
	end   time.Time // the server's ReadTimeout, zero when none
	idle  time.Duration
	rate  int64
	off   bool
}

func (h *Handler) startBodyClock(w http.ResponseWriter, r *http.Request) *bodyClock {
	c := &bodyClock{start: time.Now(), idle: h.bodyIdle, rate: h.bodyMinRate, off: w == nil}
	if !c.off {
		c.rc = http.NewResponseController(w)
	}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		c.end = c.start.Add(srv.ReadTimeout)
	}
	return c
}

// next sets the deadline of the read that follows received bytes.
func (c *bodyClock) next(received int64) {
	if c.off {
		return
	}
	deadline := time.Now().Add(c.idle)
	if byRate := c.start.Add(c.idle + time.Duration(float64(received)/float64(c.rate)*float64(time.Second))); byRate.Before(deadline) {
		deadline = byRate
	}
	if !c.end.IsZero() && c.end.Before(deadline) {
		deadline = c.end
	}
	if err := c.rc.SetReadDeadline(deadline); err != nil {
		c.off = true // not supported here
	}
}

// stop lifts the deadline once the body is read: with it, the server's
// watch for a closed connection would fail when it passes, and cancel the
// request while the handler works.
func (c *bodyClock) stop() {
	if !c.off {
		c.rc.SetReadDeadline(time.Time{})
	}
}
