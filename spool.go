package kilolock

import (
	"fmt"
	"hash/maphash"
	"os"
	"sync/atomic"
)

// Spool is a file that holds one large document out of memory: a request
// body as it arrives, or the bytes of a version being served. Its name is
// removed as soon as it is made where the system allows it, so that what
// it holds goes when it is closed, or when the process ends, whatever
// happens; elsewhere Close removes it.
//
// What is written through its Write is hashed as it goes, so that the
// engine, given a Spool with the body it maps (WriteOptions.Spool), knows
// the body's hash without reading it again.
type Spool struct {
	*os.File
	name    string // removed by Close: the system kept it when the file was made
	h       maphash.Hash
	written int64
	taken   atomic.Bool
}

// Write appends p to the file, hashing it.
func (s *Spool) Write(p []byte) (int, error) {
	n, err := s.File.Write(p)
	s.h.Write(p[:n])
	s.written += int64(n)
	return n, err
}

// Taken reports whether an Engine took the Spool over as a version's bytes
// (see WriteOptions.Spool): it is then the engine's, which closes it.
func (s *Spool) Taken() bool { return s.taken.Load() }

// sum is the hash, as sumOf hashes, of the n bytes written through Write;
// false when other writes (WriteAt) may have changed them.
func (s *Spool) sum(n int64) (uint64, bool) {
	if s.written != n {
		return 0, false
	}
	return s.h.Sum64(), true
}

// Close closes the file and frees what it holds.
func (s *Spool) Close() error {
	err := s.File.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); err == nil {
			err = rerr
		}
	}
	return err
}

// SpoolFile makes an empty Spool in Options.SpoolDir.
func (e *Engine) SpoolFile() (*Spool, error) { return newSpool(e.spoolDir) }

// newSpool makes an empty Spool in dir ("" for os.TempDir()).
func newSpool(dir string) (*Spool, error) {
	f, err := os.CreateTemp(dir, "kilolock-*.spool")
	if err != nil {
		return nil, fmt.Errorf("spool a document: %w", err)
	}
	s := &Spool{File: f}
	s.h.SetSeed(docSeed)
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}
