package kilolock

import (
	"fmt"
	"os"
)

// Spool is a file that holds one large document out of memory: a request
// body as it arrives, or the bytes of a version being served. Its name is
// removed as soon as it is made where the system allows it, so that what
// it holds goes when it is closed, or when the process ends, whatever
// happens; elsewhere Close removes it.
type Spool struct {
	*os.File
	name string // removed by Close: the system kept it when the file was made
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
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}
