package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
)

// rejection is a refused optimistic commit of lock id, lost to winner when
// it is not nil.
func rejection(id string, addresses []string, winner *kilolock.Winner) *kilolock.Rejection {
	return &kilolock.Rejection{
		LockID:       id,
		Actor:        id + "@host",
		Reason:       kilolock.ReasonWriteConflict,
		Addresses:    addresses,
		LatestSerial: 7,
		BaseSerial:   5,
		Winner:       winner,
		Hint:         "pull the state, re-plan and apply again",
	}
}

// record records r on state name and fails the test when it is refused.
func record(t testing.TB, s kilolock.Store, name string, r *kilolock.Rejection) *kilolock.Rejection {
	t.Helper()
	if err := s.RecordRejection(context.Background(), name, r); err != nil {
		t.Fatalf("RecordRejection(%q): %v", name, err)
	}
	return r
}

// testRejections checks that refused commits round-trip, newest first.
// testDelete checks that they go with their state, testQuery their view.
func testRejections(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name = "refused"

	errorIs(t, s.RecordRejection(ctx, name, rejection("a", nil, nil)), kilolock.ErrNotFound)
	_, err := s.Rejections(ctx, name, 0)
	errorIs(t, err, kilolock.ErrNotFound)
	if _, err := s.State(ctx, name); err == nil {
		t.Error("RecordRejection created the state")
	}

	lock(t, s, name, "a", kilolock.LockExclusive)
	errorIs(t, s.RecordRejection(ctx, name, nil), kilolock.ErrInvalid)
	if got, err := s.Rejections(ctx, name, 0); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Rejections of a state without any = %v, %v; want an empty list", got, err)
	}

	before := time.Now().Add(-time.Second)
	recorded := []*kilolock.Rejection{
		record(t, s, name, rejection("a", []string{"aws_instance.web[0]", "output.ip"}, &kilolock.Winner{Actor: "bob@host", LockID: "b", Version: 3})),
		record(t, s, name, rejection("c", nil, nil)),
		// A winner that pushed without a lock.
		record(t, s, name, rejection("d", []string{`module.m["x"].aws_s3_bucket.b`}, &kilolock.Winner{Version: 4})),
	}
	var lastID int64
	for i, r := range recorded {
		if r.ID <= lastID || r.State != name {
			t.Errorf("rejection %d: ID %d (previous %d), State %q", i, r.ID, lastID, r.State)
		}
		lastID = r.ID
		if r.Created.Location() != time.UTC || r.Created.Before(before) || !r.Created.Equal(r.Created.Truncate(time.Microsecond)) {
			t.Errorf("rejection %d: Created = %v, want now, UTC, in microseconds", i, r.Created)
		}
	}
	want := []kilolock.Rejection{*recorded[2], *recorded[1], *recorded[0]}
	got, err := s.Rejections(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("Rejections (-want +got):\n%s", diff)
	}
	if got[1].Winner != nil || got[1].Addresses == nil {
		t.Errorf("rejection without winner or addresses read back as %+v", got[1])
	}
	if got, err = s.Rejections(ctx, name, 2); err != nil || len(got) != 2 || got[0].ID != recorded[2].ID || got[1].ID != recorded[1].ID {
		t.Errorf("Rejections(limit 2) = %+v, %v; want the newest two", got, err)
	}

	// Another state's rejections stay its own.
	lock(t, s, "refused-other", "o", kilolock.LockExclusive)
	record(t, s, "refused-other", rejection("o", nil, nil))
	if got, err := s.Rejections(ctx, name, 0); err != nil || len(got) != 3 {
		t.Errorf("Rejections after another state's = %d, %v; want 3", len(got), err)
	}

	// The default limit is 50.
	for i := range 50 {
		record(t, s, name, rejection(fmt.Sprint("many-", i), nil, nil))
	}
	for _, limit := range []int{0, -1} {
		got, err := s.Rejections(ctx, name, limit)
		if err != nil || len(got) != 50 || got[0].LockID != "many-49" {
			t.Errorf("Rejections(limit %d) = %d rows, %v; want the newest 50", limit, len(got), err)
		}
	}
	if got, err := s.Rejections(ctx, name, 100); err != nil || len(got) != 53 {
		t.Errorf("Rejections(limit 100) = %d rows, %v; want all 53", len(got), err)
	}
}
