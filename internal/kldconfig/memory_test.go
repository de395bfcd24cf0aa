package kldconfig

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock"
)

func TestMemoryApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	parse := func(t *testing.T, args ...string) *Memory {
		t.Helper()
		var c struct {
			Memory Memory `embed:""`
		}
		parser, err := kong.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(args); err != nil {
			t.Fatalf("parse %v: %v", args, err)
		}
		return &c.Memory
	}
	gogc, had := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOGC", gogc)
		}
	})
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"default", nil, nil, DefaultGCPercent},
		{"flag", []string{"--gc-percent=50"}, nil, 50},
		{"KL_GC_PERCENT", nil, map[string]string{"KL_GC_PERCENT": "35"}, 35},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if got := parse(t, tt.args...).Apply(); got != tt.want {
				t.Errorf("Apply = %d, want %d", got, tt.want)
			}
			// The floor may have raised it since, never lowered it.
			stopGCFloor()
			if got := debug.SetGCPercent(100); got < tt.want {
				t.Errorf("the process's target is %d, want %d or more", got, tt.want)
			}
		})
	}
	t.Run("GOGC wins", func(t *testing.T) {
		t.Setenv("GOGC", "70")
		debug.SetGCPercent(70) // what the runtime read from GOGC at start
		if got := parse(t, "--gc-percent=10").Apply(); got != 70 {
			t.Errorf("Apply with GOGC=70 = %d, want 70", got)
		}
	})
}

// TestStateCache: --state-cache and KL_STATE_CACHE set the engine's cache
// budget, kilolock.DefaultCacheBytes unless told; under 1MiB is refused.
func TestStateCache(t *testing.T) {
	parse := func(args ...string) (*Memory, error) {
		var c struct {
			Memory Memory `embed:""`
		}
		parser, err := kong.New(&c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse(args)
		return &c.Memory, err
	}
	tests := []struct {
		name string
		args []string
		env  string
		want int64
	}{
		{"default", nil, "", kilolock.DefaultCacheBytes},
		{"flag", []string{"--state-cache=1GiB", "--spool-dir=" + t.TempDir()}, "", 1 << 30},
		{"KL_STATE_CACHE", nil, "64MB", 64_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != "" {
				t.Setenv("KL_STATE_CACHE", tt.env)
			}
			m, err := parse(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			o := m.Engine(kilolock.Options{DefaultLockMode: kilolock.LockOptimistic})
			if o.CacheBytes != tt.want || o.SpoolDir != m.SpoolDir || o.DefaultLockMode != kilolock.LockOptimistic {
				t.Errorf("Engine = %+v, want CacheBytes %d and the spool dir %q", o, tt.want, m.SpoolDir)
			}
		})
	}
	if _, err := parse("--state-cache=0"); err == nil {
		t.Error("--state-cache=0 was accepted")
	}
	if _, err := parse("--state-cache=512KiB"); err == nil || !strings.Contains(err.Error(), "at least 1MiB") {
		t.Errorf("--state-cache=512KiB: %v, want a refusal saying at least 1MiB", err)
	}
}
