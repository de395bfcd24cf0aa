package httpbackend

import (
	"context"
	"net/http"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// commitWatch is a store that notes, as each commit begins, what the
// handler still holds of request bodies.
type commitWatch struct {
	kilolock.Store
	h    *Handler
	held []int64
}

func (c *commitWatch) Commit(ctx context.Context, name string, cm *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats, error) {
	c.held = append(c.held, c.h.bodies.held.Load())
	return c.Store.Commit(ctx, name, cm)
}

// TestPostFreesTheBodyBeforeTheCommit: a large POST's body (spooled to a
// file) is given back, budget and memory, once the engine has parsed it,
// before the store writes the version, so that a big first write never
// holds the body and the rows being written at once. The state served
// after is still the one posted.
func TestPostFreesTheBodyBeforeTheCommit(t *testing.T) {
	skipUnspooled(t)
	doc := graphtest.Generate(2000, 512, graph.FormatIndent) // about 1.8 MB
	if len(doc) < spoolMinBody {
		t.Fatalf("the state is %d bytes, too small to be spooled", len(doc))
	}
	series, err := graphtest.NewSeries(doc)
	if err != nil {
		t.Fatal(err)
	}
	eachEnv(t, Options{}, func(t *testing.T, plain *testEnv) {
		watch := &commitWatch{Store: plain.store}
		env := newEnvOn(t, watch, Options{})
		watch.h = env.h
		for i, d := range [][]byte{doc, series.Next()} {
			env.post("big", "", d)
			if len(watch.held) != i+1 || watch.held[i] != 0 {
				t.Errorf("POST %d: body bytes held as each commit began: %v; want 0", i+1, watch.held)
			}
			if got := env.do("GET", "/v1/states/big", nil); got.Code != http.StatusOK || got.Body.String() != string(d) {
				t.Fatalf("GET after POST %d: %d, %d bytes; want the %d posted", i+1, got.Code, got.Body.Len(), len(d))
			}
		}
		if held := env.h.bodies.held.Load(); held != 0 {
			t.Errorf("after the requests: %d bytes of the budget held", held)
		}
	})
}
