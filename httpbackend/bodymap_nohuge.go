//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package httpbackend

// hugePages: no advice to give here.
func hugePages([]byte) {}
