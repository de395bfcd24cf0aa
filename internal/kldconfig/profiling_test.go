package kldconfig

import (
	"runtime"
	"testing"
)

// A kld that serves its profiles keeps sampling allocations, so that its
// heap and allocs profiles have something in them; one that does not
// serve them stops paying for the samples.
func TestProfilingApply(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	const rate = 512 * 1024
	runtime.MemProfileRate = rate
	(&Profiling{PprofListen: "127.0.0.1:6060"}).Apply()
	if runtime.MemProfileRate != rate {
		t.Errorf("with --pprof-listen, MemProfileRate = %d, want Go's %d", runtime.MemProfileRate, rate)
	}
	(&Profiling{}).Apply()
	if runtime.MemProfileRate != 0 {
		t.Errorf("without --pprof-listen, MemProfileRate = %d, want 0 (no sampling)", runtime.MemProfileRate)
	}
}
