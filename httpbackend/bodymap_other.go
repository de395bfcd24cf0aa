//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package httpbackend

import (
	"errors"
	"os"
)

// canMapSpool: no mappings here, so large bodies are read into the heap.
const canMapSpool = false

func mapSpool(*os.File, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapSpool([]byte) error { return nil }

func forgetPages([]byte, int, int) {}
