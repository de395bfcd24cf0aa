package klcli

import (
	"encoding/json"
	"testing"
	"time"
)

func TestFormatAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{1500 * time.Millisecond, "2s"},
		{90 * time.Second, "1m30s"},
		{47 * time.Hour, "47h0m0s"},
		{50 * time.Hour, "2d2h"},
	} {
		if got := formatAge(tc.d); got != tc.want {
			t.Errorf("formatAge(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "NULL"},
		{"a\tb", `a\tb`},
		{json.Number("12345678901234567890"), "12345678901234567890"},
		{int64(-3), "-3"},
		{1.5, "1.5"},
		{true, "true"},
		{[]byte{0xff, 0x00}, `\xff00`},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05Z"},
	} {
		if got := formatValue(tc.v); got != tc.want {
			t.Errorf("formatValue(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
