//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbackend

import (
	"os"
	"syscall"
)

// canMapSpool: large bodies are spooled and mapped here.
const canMapSpool = true

// mapSpool maps the first n bytes of f, read-only: its pages take memory
// only as they are read, and are read again from the file once given back.
func mapSpool(f *os.File, n int) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	return syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapSpool(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return syscall.Munmap(b)
}

// pageSize is the system's memory page size.
var pageSize = os.Getpagesize()

// forgetPages gives back the pages wholly inside m[from:to], a mapping of
// mapSpool: advice only, their bytes are read from the file again when
// needed.
func forgetPages(m []byte, from, to int) {
	lo := (from + pageSize - 1) &^ (pageSize - 1)
	hi := min(to, len(m)) &^ (pageSize - 1)
	if lo < hi {
		syscall.Madvise(m[lo:hi], syscall.MADV_DONTNEED)
	}
}
