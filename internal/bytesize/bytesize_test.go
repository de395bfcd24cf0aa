package bytesize

import "testing"

func TestSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		str  string
	}{
		{"64MiB", 64 << 20, "64MiB"},
		{"64mib", 64 << 20, "64MiB"},
		{"1GiB", 1 << 30, "1GiB"},
		{"512 KiB", 512 << 10, "512KiB"},
		{"100MB", 100_000_000, "100000000B"},
		{"2K", 2 << 10, "2KiB"},
		{"1048576", 1 << 20, "1MiB"},
		{"1000B", 1000, "1000B"},
	}
	for _, tt := range tests {
		var s Size
		if err := s.UnmarshalText([]byte(tt.in)); err != nil || s != tt.want || s.String() != tt.str {
			t.Errorf("%q: got %d (%s), %v; want %d (%s)", tt.in, s, s, err, tt.want, tt.str)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "0", "12XB", "1.5GiB", "99999999999GiB"} {
		var s Size
		if err := s.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q: no error, got %d", bad, s)
		}
	}
}
