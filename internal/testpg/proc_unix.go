//go:build unix

package testpg

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcAttr runs cmd as owner (when not nil) and in a process group of
// its own, so that a Ctrl-C meant for the tests reaches Main's handler, which
// stops the server, rather than the server itself.
func setProcAttr(cmd *exec.Cmd, owner *account) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if owner != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(owner.uid), Gid: uint32(owner.gid)}
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
