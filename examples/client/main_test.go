package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// TestRun runs the example against kld's handler on a real SQLite store:
// it lists the states, follows a run that another client ends while it
// watches, and prints the outputs.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "kld.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet := log.New(io.Discard)
	srv := httptest.NewServer(httpbackend.New(kilolock.NewEngine(s, kilolock.Options{Logger: quiet}),
		httpbackend.Options{Logger: quiet}))
	defer srv.Close()

	// Another client (the orchestrator) writes the state and
	// starts a run.
	other, err := client.New(srv.URL, client.WithActor("ci@runner"))
	if err != nil {
		t.Fatal(err)
	}
	state := `{"version":4,"terraform_version":"1.9.0","serial":3,"lineage":"net","outputs":{"vpc_id":{"value":"vpc-123","type":"string"},"secret":{"value":"x","type":"string","sensitive":true}},"resources":[]}`
	if _, err := other.PutState(ctx, "network", "", []byte(state)); err != nil {
		t.Fatal(err)
	}
	var rs []kilolock.Reservation
	if err := json.Unmarshal([]byte(`[{"pattern":"*","mode":"write"}]`), &rs); err != nil {
		t.Fatal(err)
	}
	r, err := other.StartRun(ctx, "network", client.RunRequest{Actor: "ci@runner", Reservations: rs, SourceSerial: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AcquireRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		other.EndRun(ctx, r.ID, client.RunEndRequest{Status: kilolock.RunSucceeded})
	}()

	var out bytes.Buffer
	cfg := config{URL: srv.URL, State: "network", Poll: 50 * time.Millisecond, Out: &out}
	if err := run(ctx, cfg); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"1 state(s)\n  network",
		"run " + r.ID + " by ci@runner: active\n",
		"run " + r.ID + " by ci@runner: succeeded\n",
		"outputs of network (version 1, serial 3):\n  secret = (sensitive)\n  vpc_id = \"vpc-123\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the output lacks %q:\n%s", want, got)
		}
	}
}
