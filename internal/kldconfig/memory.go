package kldconfig

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is kld's garbage collection target: the heap may grow
// 20% past what was live at the last collection, where Go's default lets
// it double. kld's heap is mostly the states it caches, large arrays of
// bytes without pointers that a collection marks at almost no cost, and
// the bodies it reads are outside the heap; so collecting five times as
// often costs little CPU and keeps kld's peak memory near what it holds
// (about 3x a 140 MB state's bytes while serving it, where the default
// gave about 4x; internal/e2e BenchmarkKLDMemory).
const DefaultGCPercent = 20

// Memory is the flag of kld's garbage collection target.
type Memory struct {
	GCPercent int `name:"gc-percent" default:"20" env:"KL_GC_PERCENT" help:"How far, in percent, the heap may grow past what was live at the last garbage collection before the next (Go's GOGC; a GOGC in the environment wins). Lower keeps kld's peak memory nearer what it holds, at some CPU; -1 turns collection off."`
}

// Apply sets the target for the process, unless GOGC is set in its
// environment, and returns the target in force.
func (m *Memory) Apply() int {
	if _, ok := os.LookupEnv("GOGC"); ok {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(m.GCPercent)
	return m.GCPercent
}
