package client

import (
	"io"
	"net/http"
	"strconv"
	"sync"
)

// handlerTransport serves requests with an http.Handler in this process,
// without a socket. The answer's body is streamed through a pipe as the
// handler writes it, so a large export is held by neither side at once.
type handlerTransport struct {
	h http.Handler
}

// InProcess returns a RoundTripper that serves every request with h in this
// process: no listener, no socket, no copy of the answer. The handler's
// request carries RemoteAddr "in-process". Use it with WithTransport to
// reach an httpbackend.Handler over an engine opened on a database.
func InProcess(h http.Handler) http.RoundTripper { return handlerTransport{h: h} }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "in-process"
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: make(http.Header), pr: pr, pw: pw, ready: make(chan struct{}), req: req}
	go w.serve(t.h, r)
	select {
	case <-w.ready:
		return w.resp, nil
	case <-req.Context().Done():
		// The handler has the same context: it stops, and a write it
		// still makes fails rather than blocks.
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
}

// pipeWriter is the handler's ResponseWriter: the status and headers are
// handed to the caller at the first write (or when the handler returns),
// the body through the pipe.
type pipeWriter struct {
	header http.Header
	pr     *io.PipeReader
	pw     *io.PipeWriter
	req    *http.Request
	once   sync.Once
	ready  chan struct{}
	resp   *http.Response
}

func (w *pipeWriter) serve(h http.Handler, r *http.Request) {
	defer func() {
		p := recover()
		switch {
		case p == nil:
			w.WriteHeader(http.StatusOK)
			w.pw.Close()
		case p == http.ErrAbortHandler:
			// The handler gave up mid-answer, as over a socket the
			// connection would be cut: the reader sees an error, not
			// a short body it could take for a whole one.
			w.WriteHeader(http.StatusInternalServerError)
			w.pw.CloseWithError(io.ErrUnexpectedEOF)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			w.pw.CloseWithError(io.ErrUnexpectedEOF)
			panic(p)
		}
	}()
	h.ServeHTTP(w, r)
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	if status >= 100 && status < 200 && status != http.StatusSwitchingProtocols {
		return // informational: nothing for the caller
	}
	w.once.Do(func() {
		h := w.header.Clone()
		w.resp = &http.Response{
			Status:        http.StatusText(status),
			StatusCode:    status,
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        h,
			Body:          w.pr,
			ContentLength: contentLength(h),
			Request:       w.req,
		}
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush is a no-op: each Write reaches the reader as it happens.
func (w *pipeWriter) Flush() {}

// contentLength is the length the handler declared, -1 when it declared
// none.
func contentLength(h http.Header) int64 {
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
