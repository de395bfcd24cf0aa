package kilolock_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/enginetest"
)

func TestParseVersionRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want kilolock.VersionRef
		bad  bool
	}{
		{in: "@1", want: kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}},
		{in: "@37", want: kilolock.VersionRef{Kind: kilolock.RefNumber, N: 37}},
		{in: "@latest", want: kilolock.Latest},
		{in: "@-1", want: kilolock.VersionRef{Kind: kilolock.RefRelative, N: 1}},
		{in: "serial:52", want: kilolock.VersionRef{Kind: kilolock.RefSerial, N: 52}},
		{in: "@0", bad: true},
		{in: "@-0", bad: true},
		{in: "@", bad: true},
		{in: "3", bad: true},
		{in: "serial:", bad: true},
		{in: "serial:x", bad: true},
		{in: "@latest1", bad: true},
		{in: "latest", bad: true},
		{in: "pre-migration", want: kilolock.VersionRef{Kind: kilolock.RefTag, Tag: "pre-migration"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := kilolock.ParseVersionRef(tc.in)
			if tc.bad {
				if !errors.Is(err, kilolock.ErrInvalid) {
					t.Fatalf("ParseVersionRef(%q) = %v, %v; want ErrInvalid", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseVersionRef(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Fatalf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func FuzzParseVersionRef(f *testing.F) {
	for _, s := range []string{"@1", "@latest", "@-1", "serial:5", "@", "serial:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := kilolock.ParseVersionRef(s)
		if err != nil {
			return
		}
		back, err := kilolock.ParseVersionRef(r.String())
		if err != nil || back != r {
			t.Fatalf("%q parsed to %v, whose String %q parses to %v, %v", s, r, r.String(), back, err)
		}
	})
}

func TestResolveVersion(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	// serials 3, 5, 9: versions @1, @2, @3
	for _, serial := range []int{3, 5, 9} {
		if _, err := e.Write(ctx, "example", enginetest.TFState(t, true, serial, "L", "a", strings.Repeat("b", serial)), kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		ref    string
		number int64
	}{{"@1", 1}, {"@3", 3}, {"@latest", 3}, {"@-1", 2}, {"@-2", 1}, {"serial:5", 2}, {"serial:9", 3}} {
		ref, _ := kilolock.ParseVersionRef(tc.ref)
		v, err := e.ResolveVersion(ctx, "example", ref)
		if err != nil || v.Number != tc.number {
			t.Fatalf("ResolveVersion(%s) = %+v, %v; want @%d", tc.ref, v, err, tc.number)
		}
	}
	for _, ref := range []string{"@4", "@-3", "serial:4", "serial:10"} {
		r, _ := kilolock.ParseVersionRef(ref)
		_, err := e.ResolveVersion(ctx, "example", r)
		var nf *kilolock.VersionNotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, kilolock.ErrNotFound) {
			t.Fatalf("ResolveVersion(%s) error %v, want a VersionNotFoundError", ref, err)
		}
		if want := "state example has no version " + ref + ": it has versions @1…@3 (serials 3…9)"; err.Error() != want {
			t.Fatalf("error %q, want %q", err, want)
		}
	}
	if _, err := e.ResolveVersion(ctx, "missing", kilolock.Latest); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("ResolveVersion of a missing state: %v", err)
	}
}
