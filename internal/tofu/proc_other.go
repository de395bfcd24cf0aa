//go:build !unix

package tofu

import "os"

// processAlive reports whether a process with this id exists; without a
// cheap way to tell, it says yes, so nothing is removed.
func processAlive(pid int) bool { return true }

// terminate stops p; there is no SIGTERM to ask it gracefully.
func terminate(p *os.Process) error { return p.Kill() }
