//go:build !unix

package testpg

import "os/exec"

func setProcAttr(cmd *exec.Cmd, owner *account) {}

// processAlive cannot tell here, so stale clusters are never reaped.
func processAlive(pid int) bool { return true }
