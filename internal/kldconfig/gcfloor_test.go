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
	if gogc*live/100 < floor*99/100 {
		t.Errorf("live heap %d bytes, target %d%%: the next collection comes after %d bytes, want %d at least", live, gogc, gogc*live/100, floor)
	}

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

	// Kld's default keeps the floor.
	if got := (&Memory{GCPercent: DefaultGCPercent}).Apply(); got != DefaultGCPercent {
		t.Fatalf("Apply = %d, want %d", got, DefaultGCPercent)
	}
	big = nil
	gogc, live = collected(t, func(gogc uint64) bool { return gogc != DefaultGCPercent })
	if gogc*live/100 < GCFloorBytes*99/100 {
		t.Errorf("after Apply: live heap %d bytes, target %d%%; want room for GCFloorBytes", live, gogc)
	}

	stopGCFloor()
	debug.SetGCPercent(20)
	runtime.GC()
	time.Sleep(50 * time.Millisecond) // a stopped floor's finalizer would have run
	if got := readGOGC(); got != 20 {
		t.Errorf("stopped: target %d%%, want the 20 last set", got)
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

func readGOGC() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
