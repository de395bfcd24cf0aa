package httpbackend

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"
)

// BenchmarkReadBody reads the bench state's body (about 13 MB, with its
// Content-Length, as both CLIs send it) as a POST does, without the rest
// of the POST: the cost of receiving a body, beside BenchmarkPostFloor.
func BenchmarkReadBody(b *testing.B) {
	body := benchBase()
	h := newEnv(b, "", Options{}).h
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ri := &reqInfo{w: httptest.NewRecorder()}
		r := httptest.NewRequest("POST", "/v1/states/bench", bytes.NewReader(body))
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
		got, err := h.readBody(r, h.bodyLimit)
		if err != nil || len(got) != len(body) {
			b.Fatalf("readBody: %d bytes, %v", len(got), err)
		}
		h.releaseBodies(ri)
	}
}
