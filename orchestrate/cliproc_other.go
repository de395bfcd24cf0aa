//go:build !linux

package orchestrate

import (
	"os"
	"os/exec"
)

// ownProcessGroup leaves cmd in kl's process group, as terraform-exec does
// outside Linux.
func ownProcessGroup(*exec.Cmd) {}

// interruptGroup interrupts p (its children get no signal of kl's).
func interruptGroup(p *os.Process) { _ = p.Signal(os.Interrupt) }

// killGroup kills p.
func killGroup(p *os.Process) { _ = p.Kill() }

// readerGone reports that a reader went away on any SIGPIPE: without
// poll's answer, kl cannot tell which descriptor it was for.
func readerGone(...int) bool { return true }
