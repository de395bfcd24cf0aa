package httpbackend

import (
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// getState answers GET /v1/states/{name}: the current version's bytes, or
// 404 before the first write, which both CLIs read as an empty state.
func (h *Handler) getState(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	body, err := h.engine.Open(r.Context(), name)
	if errors.Is(err, kilolock.ErrNotFound) {
		return noVersionYet(name)
	}
	if err != nil {
		return err
	}
	return h.serveBody(w, r, body)
}

// serveBody writes a version's bytes with its version headers, streamed:
// gzip-compressed to a client that accepts it (both CLIs do), as they are
// compressed the first time and from the compressed copy after, else plain
// as they are rendered. Nothing is built in memory per request.
func (h *Handler) serveBody(w http.ResponseWriter, r *http.Request, b *kilolock.Body) error {
	v := &b.Version
	hdr := w.Header()
	etag := fmt.Sprintf(`"v%d-s%d-%d"`, v.Number, v.Serial, v.ID)
	setVersionHeaders(hdr, v)
	hdr.Set("ETag", etag)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store") // state holds secrets: no proxy caches it
	hdr.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	write := b.WriteTo
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		if n, ok := b.GzipSize(); ok {
			hdr.Set("Content-Length", strconv.FormatInt(n, 10))
		} // else: chunked, as it is compressed
		write = b.WriteGzipTo
	} else {
		size, err := b.Size()
		if err != nil {
			return err
		}
		hdr.Set("Content-Length", strconv.FormatInt(size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	cw := &clientWriter{w: w}
	if _, err := write(cw); err != nil && cw.err == nil {
		// The status is sent: cut the response, so the client sees a
		// failure rather than a short state.
		h.log.Error("serving a state failed after its first bytes", "state", v.State, "version", v.Number, "request_id", info(r).id, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// clientWriter remembers the error of writing to the client (gone away),
// to tell it from a failure to make the bytes.
type clientWriter struct {
	w   io.Writer
	err error
}

func (c *clientWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		if !ok {
			return true
		}
		f, err := strconv.ParseFloat(q, 64)
		return err == nil && f > 0
	}
	return false
}

func setVersionHeaders(hdr http.Header, v *kilolock.Version) {
	hdr.Set("X-Kilolock-Version", strconv.FormatInt(v.Number, 10))
	hdr.Set("X-Kilolock-Serial", strconv.FormatUint(v.Serial, 10))
}

// writeAnswer is the body of a successful POST: both CLIs ignore it, a
// person with curl or a script reads what happened. Merged is true when an
// optimistic write was merged onto versions committed since its lock's
// base serial (its source stays apply); rows and bytes are what the commit
// wrote to the database.
type writeAnswer = client.WriteAnswer

// postState answers POST /v1/states/{name}?ID=<lock id>: it stores the body
// as a new version. The lock, lineage and serial rules are the store's.
func (h *Handler) postState(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	lockID := r.URL.Query().Get("ID")
	info(r).lockID = lockID
	body, err := h.readBody(r, h.bodyLimit)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return &kilolock.InvalidError{Code: "empty_state", Message: "the request body is empty", Hint: "POST the state file as terraform/tofu wrote it; to remove a state use DELETE"}
	}
	// The checksum is computed beside the parse (another core), and
	// checked before anything is stored. The handler waits for it in any
	// case: the body's file goes at the release below, or when the
	// request ends (see spoolMinBody). Each reads a spooled body giving
	// its pages back behind it.
	ri := info(r)
	done, spool := bodyDone(ri, body), bodySpool(ri, body)
	sum := make(chan error, 1)
	go func() { sum <- checkMD5(r.Header.Get("Content-MD5"), body, spool) }()
	verify := sync.OnceValue(func() error { return <-sum })
	defer verify()
	// The body goes as soon as the engine is done with it, before the
	// store writes the version.
	release := func() {
		verify() // the checksum has read the body
		h.releaseBodies(ri)
	}
	// A body in memory is the request's own (see readBody), never
	// changed or reused: the engine may keep it rather than copy it. A
	// spooled one is a mapping, unmapped when the request ends.
	owned := spoolOf(ri, body) == nil
	res, err := h.engine.Write(r.Context(), name, body, kilolock.WriteOptions{LockID: lockID, Actor: info(r).workload, Verify: verify, Release: release, Done: done, Spool: spool, Owned: owned})
	if err != nil {
		return err
	}
	v := &res.Version
	if !res.Unchanged {
		source := v.Source
		if v.Merged {
			source = kilolock.SourceMerge // counted apart: how often writers shared a state
		}
		h.metrics.ObserveCommit(source, res.Stats)
	}
	ri.quotaWarnings = res.QuotaWarnings
	setVersionHeaders(w.Header(), v)
	writeJSON(w, http.StatusOK, &writeAnswer{
		State: name, Version: v.Number, Serial: v.Serial, Source: v.Source, BaseSerial: v.BaseSerial, Merged: v.Merged, Unchanged: res.Unchanged,
		Added: v.Added, Changed: v.Changed, Removed: v.Removed,
		Rows: res.Stats.Rows, Bytes: res.Stats.Bytes, QuotaWarnings: res.QuotaWarnings,
	})
	return nil
}

// checkMD5 verifies a Content-MD5 header (base64 of the body's MD5), which
// both CLIs send with every body. No header, no check.
func checkMD5(header string, body []byte, spool *kilolock.Spool) error {
	if header == "" {
		return nil
	}
	want, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header))
	if err != nil || len(want) != md5.Size {
		return &kilolock.InvalidError{Code: "checksum_mismatch", Message: fmt.Sprintf("the Content-MD5 header %q is not a base64 MD5 digest", header), Hint: "send Content-MD5 as the base64 encoding of the body's 16-byte MD5, or leave it out; nothing was stored"}
	}
	got := bodyMD5(body, spool)
	if string(got[:]) != string(want) {
		return &kilolock.InvalidError{Code: "checksum_mismatch",
			Message: fmt.Sprintf("the body's MD5 is %s but Content-MD5 says %s", base64.StdEncoding.EncodeToString(got[:]), header),
			Hint:    "the body was altered or cut on its way (a proxy?); nothing was stored, send it again"}
	}
	return nil
}

// deleteState answers DELETE /v1/states/{name}: it removes the state with
// its history. A locked state is deleted only by its holder (?ID=) or with
// ?force=true.
func (h *Handler) deleteState(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	id := r.URL.Query().Get("ID")
	info(r).lockID = id
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	versions, err := h.engine.Delete(r.Context(), name, kilolock.DeleteOptions{LockID: id, Force: force})
	if err != nil {
		return err
	}
	h.log.Warn("state deleted", "state", name, "request_id", info(r).id, "versions", versions)
	writeJSON(w, http.StatusOK, client.DeleteAnswer{Deleted: name, Versions: versions})
	return nil
}

// bodyMD5 is the MD5 of body, read from spool when it holds body (its
// file, not body's pages, which the engine gives back as it reads them).
func bodyMD5(body []byte, spool *kilolock.Spool) [md5.Size]byte {
	if spool == nil {
		return md5.Sum(body)
	}
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(spool, 0, int64(len(body)))); err != nil {
		return md5.Sum(body) // read it from memory after all
	}
	var sum [md5.Size]byte
	h.Sum(sum[:0])
	return sum
}
