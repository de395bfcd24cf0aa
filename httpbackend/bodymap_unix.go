//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbackend

import "syscall"

// mapBody returns n bytes of fresh anonymous memory outside the Go heap:
// its pages take memory only as they are first written, and unmapBody
// gives them back at once.
func mapBody(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err == nil {
		hugePages(b)
	}
	return b, err
}

func unmapBody(b []byte) error { return syscall.Munmap(b) }
