// Package progress shows how far kl's long work has come — the import
// and export of large states today; drift checks and the phases of an
// orchestrated apply when they land — on a terminal, and nothing
// anywhere else.
//
// Work reports through the Reporter of its context, so code deep in a
// client reports without being handed anything:
//
//	ctx = progress.With(ctx, progress.Auto(os.Stderr, jsonMode))
//	step := progress.From(ctx).Start("upload", int64(len(body)), progress.Bytes)
//	defer step.Done()
//	r := step.Reader(bytes.NewReader(body))
//
// A drift check calls Start("drift check", instances, progress.Items) and
// Add(1) per instance; an orchestrated apply starts one step per phase
// (plan, reserve, re-plan, apply, commit) with total 0, which shows a
// running clock.
package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// Unit is what a step counts.
type Unit uint8

// Units of steps.
const (
	Bytes Unit = iota // shown as KiB, MiB
	Items             // instances, checks: shown as numbers
)

// Reporter starts the steps of long work.
type Reporter interface {
	// Start begins a step of total units (0 when not known).
	Start(name string, total int64, unit Unit) Step
}

// Step is one step under way.
type Step interface {
	// Add counts n more units done.
	Add(n int64)
	// Reader counts what is read through r.
	Reader(r io.Reader) io.Reader
	// Done ends the step.
	Done()
}

type ctxKey struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// From returns the Reporter of ctx; one that shows nothing when there is
// none.
func From(ctx context.Context) Reporter {
	if r, ok := ctx.Value(ctxKey{}).(Reporter); ok && r != nil {
		return r
	}
	return Silent
}

// Silent shows nothing.
var Silent Reporter = silent{}

type silent struct{}

func (silent) Start(string, int64, Unit) Step { return silentStep{} }

type silentStep struct{}

func (silentStep) Add(int64)                    {}
func (silentStep) Reader(r io.Reader) io.Reader { return r }
func (silentStep) Done()                        {}

// Auto is a Terminal on f when f is a terminal and quiet is false (kl's
// --json), else Silent: scripts and pipes never see progress.
func Auto(f *os.File, quiet bool) Reporter {
	if quiet || f == nil || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return Silent
	}
	return NewTerminal(f)
}

// Terminal redraws one status line per step, at most every Interval,
// and leaves a final line when the step is done.
type Terminal struct {
	w io.Writer
	// Interval is the least time between two redraws.
	Interval time.Duration
	now      func() time.Time
}

// NewTerminal returns a Terminal writing to w.
func NewTerminal(w io.Writer) *Terminal {
	return &Terminal{w: w, Interval: 100 * time.Millisecond, now: time.Now}
}

// Start implements Reporter.
func (t *Terminal) Start(name string, total int64, unit Unit) Step {
	s := &termStep{t: t, name: name, total: total, unit: unit, start: t.now()}
	s.draw(false)
	return s
}

type termStep struct {
	t     *Terminal
	name  string
	total int64
	unit  Unit
	start time.Time

	mu    sync.Mutex
	done  int64
	drawn time.Time
	ended bool
}

func (s *termStep) Add(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done += n
	if s.t.now().Sub(s.drawn) >= s.t.Interval {
		s.drawLocked(false)
	}
}

func (s *termStep) Reader(r io.Reader) io.Reader { return &countingReader{r: r, s: s} }

func (s *termStep) Done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.drawLocked(true)
	}
}

func (s *termStep) draw(final bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drawLocked(final)
}

// drawLocked rewrites the line: "upload  12.0 MiB / 40.0 MiB  30%  3.1s".
func (s *termStep) drawLocked(final bool) {
	now := s.t.now()
	s.drawn = now
	elapsed := now.Sub(s.start).Round(100 * time.Millisecond)
	line := s.name
	show := Size
	if s.unit == Items {
		show = func(n int64) string { return fmt.Sprint(n) }
	}
	switch {
	case s.total > 0:
		line += fmt.Sprintf("  %s / %s  %d%%", show(s.done), show(s.total), min(100, s.done*100/s.total))
	case s.done > 0:
		line += "  " + show(s.done)
	}
	line += fmt.Sprintf("  %s", elapsed)
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(s.t.w, "\r\x1b[K%s%s", line, end)
}

type countingReader struct {
	r io.Reader
	s *termStep
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.s.Add(int64(n))
	return n, err
}

// Size shows n bytes for people: 512 B, 1.5 KiB, 40.0 MiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
