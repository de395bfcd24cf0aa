package client_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/httpbackend"
)

// BenchmarkExport reads a 10,000-instance state through the client, in
// process (what kl --database does) and over a loopback socket (what kl
// does against kld), to show the in-process transport costs no more than
// the socket and streams rather than buffers (allocated bytes per read
// stay well below twice the state's size).
func BenchmarkExport(b *testing.B) {
	ctx := context.Background()
	h := newKLD(b, httpbackend.Options{})
	state := graphtest.Generate(10_000, 200, graph.FormatIndent)
	setup := inProcess(b, h)
	if _, err := setup.PutState(ctx, "big", "", state); err != nil {
		b.Fatal(err)
	}
	// One read first, so neither side pays for the first render.
	rc, err := setup.Export(ctx, "big", "")
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	socket, err := client.New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		c    *client.Client
	}{{"in-process", setup}, {"socket", socket}} {
		b.Run("export/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(state)))
			for b.Loop() {
				rc, err := bc.c.Export(ctx, "big", "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				rc.Close()
			}
		})
		b.Run("state/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(state)))
			for b.Loop() {
				f, err := bc.c.State(ctx, "big")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, f); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
