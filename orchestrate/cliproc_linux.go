package orchestrate

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownProcessGroup makes cmd the leader of a process group of its own, as
// terraform-exec does: a Ctrl-C in kl's terminal reaches kl alone, which
// passes it on (interruptGroup), and the CLI dies with kl.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// interruptGroup sends SIGINT to p's process group.
func interruptGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGINT) }

// killGroup sends SIGKILL to p's process group.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// readerGone reports whether any of fds is a pipe or socket whose reader
// went away: poll flags its writing end with POLLERR (or POLLHUP).
func readerGone(fds ...int) bool {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i].Fd = int32(fd)
	}
	if _, err := unix.Poll(pfds, 0); err != nil {
		return false
	}
	for _, p := range pfds {
		if p.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
