package storetest

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// HeapAllocated returns the bytes fn allocated on the Go heap, all told:
// a bound on the heap it could have grown by, whatever the collector did.
func HeapAllocated(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	fn()
	metrics.Read(sample)
	return sample[0].Value.Uint64() - before
}

// PeakRSSGrowth returns how far fn raised the process's peak resident set
// above what it was when fn began, which covers memory outside the Go heap
// (an embedded database's). ok is false where Linux's /proc/self does not
// let the peak be reset and read.
func PeakRSSGrowth(fn func()) (growth uint64, ok bool) {
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		fn()
		return 0, false
	}
	before, ok := statusKiB("VmHWM:")
	fn()
	after, ok2 := statusKiB("VmHWM:")
	if !ok || !ok2 || after < before {
		return 0, false
	}
	return (after - before) << 10, true
}

func statusKiB(field string) (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == field {
			n, err := strconv.ParseUint(string(f[1]), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
