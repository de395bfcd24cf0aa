package kldconfig

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestGCFloor: after a collection, a small live heap may grow by the
// floor before the next (the target is raised past the percentage), a
// large one by the percentage (the floor adds nothing); Apply starts the
// floor with kld's default; once stopped, the target stays.
func TestGCFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer stopGCFloor()

	const floor = 64 << 20
	startGCFloor(15, floor)
	gogc, live := collected(t, func(gogc uint64) bool { return gogc != 15 })
	roomFor(t, "", live, gogc, floor)

	// 40 MB live: 1 MiB is 2.5% of it, 15% is more.
	big := make([]byte, 40<<20)
	for i := range big {
		big[i] = byte(i)
	}
	startGCFloor(15, 1<<20)
	gogc, live = collected(t, func(uint64) bool { return true })
	runtime.KeepAlive(big)
	if gogc != 15 || live < 40<<20 {
		t.Errorf("live heap %d bytes: target %d%%, want 15", live, gogc)
	}

	// --gc-floor keeps the floor.
	if got := (&Memory{GCPercent: DefaultGCPercent, GCFloor: GCFloorBytes}).Apply(); got != DefaultGCPercent {
		t.Fatalf("Apply = %d, want %d", got, DefaultGCPercent)
	}
	big = nil
	gogc, live = collected(t, func(gogc uint64) bool { return gogc != DefaultGCPercent })
	roomFor(t, "after Apply: ", live, gogc, GCFloorBytes)

	stopGCFloor()
	debug.SetGCPercent(20)
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // a stopped floor's finalizer would have run
	if got := readGOGC(); got != 20 {
		t.Errorf("stopped: target %d%%, want the 20 last set", got)
	}
}

// roomFor checks that the heap goal the last collection left is about
// floor past the live heap: not less (a collection every few requests),
// not much more (the runtime's least goal grows with the target: a
// target of 6,000% once made a 240 MB goal of a heap of half a MB).
func roomFor(t *testing.T, what string, live, gogc, floor uint64) {
	t.Helper()
	goal := readMetric("/gc/heap/goal:bytes")
	if goal < live+floor*99/100 || goal > live+floor*11/10 {
		t.Errorf("%slive heap %d bytes, target %d%%: heap goal %d, want about %d", what, live, gogc, goal, live+floor)
	}
}

// collected runs a collection and waits for the floor to set the target
// (until done says it has, or a second), returning the target and the
// live heap the collection left.
func collected(t *testing.T, done func(gogc uint64) bool) (gogc, live uint64) {
	t.Helper()
	runtime.GC()
	deadline := time.Now().Add(time.Second)
	for {
		gogc = readGOGC()
		if done(gogc) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// The finalizer runs after the collection: give it its turn.
	time.Sleep(20 * time.Millisecond)
	return readGOGC(), liveHeap()
}

func readGOGC() uint64 { return readMetric("/gc/gogc:percent") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
