package kldconfig

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// GCFloorBytes is the least kld's heap may grow between two collections,
// whatever --gc-percent says: a percentage of a small live heap is a few
// MB, less than a handful of POSTs of 0.4 MB allocate, so a kld serving
// few states collected several times per request. Profiled with 8 writers
// on 10 states of 500 instances (internal/e2e BenchmarkKLDFleet), kld spent
// twice the CPU per commit it spent on 1,000 states, its POST p50 61 ms
// against 34 ms with room to grow; past some 200 MB live, 15% is more
// than this floor, so the peak of a large state is unchanged.
const GCFloorBytes = 32 << 20

// gcFloor raises the garbage collection target after each collection so
// that the next comes no sooner than floor bytes of allocation past the
// live heap: percent, or more while the live heap is small (percent ×
// live < floor). A collection's end is seen by a finalizer that re-arms
// itself.
type gcFloor struct {
	mu      sync.Mutex
	percent int
	floor   uint64
	set     int // the target last set
	stopped bool
}

// floorState is the process's floor, started by Memory.Apply.
var floorState struct {
	sync.Mutex
	f *gcFloor
}

// startGCFloor sets the process's target to percent, kept at least floor
// bytes above the live heap from the next collection on, in place of any
// floor started before.
func startGCFloor(percent int, floor uint64) {
	floorState.Lock()
	defer floorState.Unlock()
	if floorState.f != nil {
		floorState.f.stop()
	}
	f := &gcFloor{percent: percent, floor: floor, set: percent}
	floorState.f = f
	debug.SetGCPercent(percent)
	f.arm()
}

// stopGCFloor stops the process's floor, leaving the target last set.
func stopGCFloor() {
	floorState.Lock()
	defer floorState.Unlock()
	if floorState.f != nil {
		floorState.f.stop()
		floorState.f = nil
	}
}

func (f *gcFloor) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

// gcTick is garbage from birth: its finalizer runs once a collection has
// found it unreachable, that is after every collection while it re-arms.
// Large enough not to be one of the tiny objects the runtime batches.
type gcTick struct {
	f   *gcFloor
	pad [16]byte
}

func (f *gcFloor) arm() {
	runtime.SetFinalizer(&gcTick{f: f}, func(t *gcTick) {
		if t.f.tune() {
			t.f.arm()
		}
	})
}

// tune sets the target for the next collection; false once stopped.
func (f *gcFloor) tune() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	want := f.target(liveHeap())
	if want != f.set {
		debug.SetGCPercent(want)
		f.set = want
	}
	return true
}

// heapMinimum is the runtime's least heap goal at GOGC=100, which it
// scales by the target: a target of 6,000% on the half MB live at start
// made the goal 240 MB, kld's peak RSS.
const heapMinimum = 4 << 20

// target is the percentage that lets a heap of live bytes grow by floor,
// at least percent, and no more than keeps the runtime's least goal
// (heapMinimum × target) within live + floor.
func (f *gcFloor) target(live uint64) int {
	if live == 0 {
		return f.percent
	}
	need := (f.floor*100 + live - 1) / live
	need = min(need, (live+f.floor)*100/heapMinimum)
	return max(f.percent, int(need))
}

// liveHeap is what the last collection marked live, in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
