//go:build unix

package sqlite_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the whole process has used, GC included.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
