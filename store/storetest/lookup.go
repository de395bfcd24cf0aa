package storetest

import (
	"context"
	"testing"

	"github.com/kilolock/kilolock"
)

// testLookups: VersionBySerial and InstanceHistory find what they are
// asked for, and only that.
func testLookups(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.VersionBySerial(ctx, "missing", 1); err == nil {
		t.Fatal("VersionBySerial of a missing state: nil error")
	} else {
		errorIs(t, err, kilolock.ErrNotFound)
	}
	if _, err := s.InstanceHistory(ctx, "missing", "a.b"); err == nil {
		t.Fatal("InstanceHistory of a missing state: nil error")
	} else {
		errorIs(t, err, kilolock.ErrNotFound)
	}

	web, web2 := resource("aws_instance", "web"), resource("aws_instance", "web2")
	// v1: web[0], web[1], web2; serial 1
	c := next(t, s, "look")
	c.Upserts = append(c.Upserts,
		instance(t, web, intKey(0), `{"id":"a"}`),
		instance(t, web, intKey(1), `{"id":"b"}`),
		instance(t, web2, intKey(0), `{"id":"c"}`))
	commit(t, s, "look", c)
	// v2: web[1] changed; serial 5
	c = next(t, s, "look")
	c.Version.Serial = 5
	c.Upserts = append(c.Upserts, instance(t, web, intKey(1), `{"id":"b2"}`))
	commit(t, s, "look", c)
	// v3: web[0] removed, serial 5 again (as an opaque version keeps it)
	c = next(t, s, "look")
	c.Version.Serial = 5
	c.Removed = []string{"aws_instance.web[0]"}
	commit(t, s, "look", c)

	for serial, want := range map[uint64]int64{1: 1, 5: 3} {
		v, err := s.VersionBySerial(ctx, "look", serial)
		if err != nil || v.Number != want || v.Serial != serial || v.State != "look" {
			t.Fatalf("VersionBySerial(%d) = %+v, %v; want version %d", serial, v, err, want)
		}
	}
	if _, err := s.VersionBySerial(ctx, "look", 2); err == nil {
		t.Fatal("VersionBySerial(2): nil error, want ErrNotFound")
	} else {
		errorIs(t, err, kilolock.ErrNotFound)
	}

	type row struct {
		id       string
		from, to int64
	}
	list := func(addr string) []row {
		t.Helper()
		ivs, err := s.InstanceHistory(ctx, "look", addr)
		if err != nil {
			t.Fatalf("InstanceHistory(%q): %v", addr, err)
		}
		out := []row{}
		for _, iv := range ivs {
			if iv.Instance.Hash.IsZero() || len(iv.Instance.Object) == 0 {
				t.Fatalf("InstanceHistory(%q): interval without its object: %+v", addr, iv)
			}
			out = append(out, row{iv.Instance.ID(), iv.ValidFrom, iv.ValidTo})
		}
		return out
	}
	for _, tc := range []struct {
		addr string
		want []row
	}{
		{"aws_instance.web", []row{{"aws_instance.web[0]", 1, 3}, {"aws_instance.web[1]", 1, 2}, {"aws_instance.web[1]", 2, 0}}},
		{"aws_instance.web[1]", []row{{"aws_instance.web[1]", 1, 2}, {"aws_instance.web[1]", 2, 0}}},
		{"aws_instance.web2", []row{{"aws_instance.web2[0]", 1, 0}}},
		{"aws_instance.we", []row{}},
		{"aws_instance.nothing", []row{}},
	} {
		got := list(tc.addr)
		if len(got) != len(tc.want) {
			t.Fatalf("InstanceHistory(%q) = %v, want %v", tc.addr, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("InstanceHistory(%q) = %v, want %v", tc.addr, got, tc.want)
			}
		}
	}
}
