package kldconfig

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
)

// DefaultGCPercent is kld's garbage collection target: the heap may grow
// 15% past what was live at the last collection, where Go's default lets
// it double. kld's heap is mostly the states it caches, large arrays of
// bytes without pointers that a collection marks at almost no cost, and
// the bodies it reads are outside the heap; so collecting often costs
// little CPU and keeps kld's peak memory near what it holds. Measured with
// internal/e2e BenchmarkKLDMemory, serving a 134 MiB state (100,000
// instances): peak RSS 2.8x the state at 15, 3.0x at 20; against 20, 15
// makes its POSTs and GETs up to about 10% slower, where 10 (2.8-2.9x)
// made POSTs 25-30% and GETs 40-90% slower. 15% of a small heap is less
// than a few requests allocate, though, so a kld serving many small
// states may set a floor (--gc-floor; GCFloorBytes is a good one).
const DefaultGCPercent = 15

// Memory are the flags of kld's garbage collection target, of what it
// keeps of the states it serves and of where it keeps large documents out
// of memory.
type Memory struct {
	GCPercent int `name:"gc-percent" default:"15" env:"KL_GC_PERCENT" help:"How far, in percent, the heap may grow past what was live at the last garbage collection before the next (Go's GOGC; a GOGC in the environment wins). Lower keeps kld's peak memory nearer what it holds, at some CPU; -1 turns collection off."`
	// GCFloor is the least the heap may grow between two collections,
	// whatever GCPercent says (0: no floor).
	GCFloor  httpbackend.ByteSize `name:"gc-floor" env:"KL_GC_FLOOR" help:"Least the heap may grow between two garbage collections whatever --gc-percent says (unless GOGC is set), e.g. 32MiB for a kld serving many small states, where 15% of a small heap makes kld collect several times per request. By default there is no floor, which keeps a single big state's peak memory lowest."`
	SpoolDir string               `name:"spool-dir" env:"KL_SPOOL_DIR" type:"existingdir" help:"Directory of the files in which kld keeps large states rather than in memory: request bodies as they arrive, the current versions it serves (default: the system's temporary directory). Put it on a disk, not a tmpfs."`
	// StateCache is kilolock.Options.CacheBytes; its default is
	// kilolock.DefaultCacheBytes.
	StateCache httpbackend.ByteSize `name:"state-cache" default:"160MiB" env:"KL_STATE_CACHE" help:"Most bytes kld keeps of the current versions of the states it serves, between requests: the index each write is diffed against (about 100 bytes an instance), and the documents GETs serve (in memory, or in --spool-dir from 1 MiB) with their compressed copies. Past it, documents go first, least recently used first (the next GET of the state reads it from the database), then whole states (the next write loads it). At least 1MiB; /metrics shows kl_state_cache_*."`
}

// Validate checks the flags; kong calls it as it parses them.
func (m *Memory) Validate() error {
	if m.StateCache < 1<<20 {
		return fmt.Errorf("--state-cache %s: give at least 1MiB", m.StateCache)
	}
	return nil
}

// Engine returns o with what the flags set: the cache's budget and the
// spool directory.
func (m *Memory) Engine(o kilolock.Options) kilolock.Options {
	o.CacheBytes = int64(m.StateCache)
	o.SpoolDir = m.SpoolDir
	return o
}

// Apply sets the target for the process, unless GOGC is set in its
// environment, and returns the target in force: the percentage, which the
// process raises, with a GCFloor, while its live heap is so small that
// the percentage would be less than the floor (see gcFloor).
func (m *Memory) Apply() int {
	if _, ok := os.LookupEnv("GOGC"); ok {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	if m.GCPercent < 0 {
		stopGCFloor()
		debug.SetGCPercent(m.GCPercent)
		return m.GCPercent
	}
	if m.GCFloor <= 0 {
		stopGCFloor()
		debug.SetGCPercent(m.GCPercent)
		return m.GCPercent
	}
	startGCFloor(m.GCPercent, uint64(m.GCFloor))
	return m.GCPercent
}
