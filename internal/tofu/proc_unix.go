//go:build unix

package tofu

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether a process with this id exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// terminate asks p to shut down gracefully.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
