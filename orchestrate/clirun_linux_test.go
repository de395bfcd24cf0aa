package orchestrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunCLIStopsItsGroup: an interrupted CLI gets SIGINT with its
// children; one that ignores it is killed after the grace period, and so
// is the child it left behind.
func TestRunCLIStopsItsGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		killed bool
	}{
		{"stops on SIGINT, its child does not", "sleep 60 & echo $! > child.pid; wait", false},
		{"ignores SIGINT", "trap '' INT; sleep 60 & echo $! > child.pid; wait; wait", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "fake-tofu")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancelCause(t.Context())
			done := make(chan error, 1)
			go func() { done <- runCLI(ctx, cliCommand{Dir: dir, Bin: bin, Args: []string{"apply"}}) }()
			child := waitChild(t, filepath.Join(dir, "child.pid"))
			stop(errRunEnded)
			var err error
			select {
			case err = <-done:
			case <-time.After(abortGrace + 10*time.Second):
				t.Fatal("runCLI did not return after the grace period")
			}
			var se *StoppedError
			if !errors.As(err, &se) || !errors.Is(err, context.Canceled) || se.Killed != tc.killed || se.Grace != abortGrace {
				t.Fatalf("runCLI = %#v, want a StoppedError (killed %v, grace %s)", err, tc.killed, abortGrace)
			}
			// The child got SIGKILL as runCLI returned; it may take a
			// moment to die.
			for deadline := time.Now().Add(3 * time.Second); alive(child); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					syscall.Kill(child, syscall.SIGKILL)
					t.Fatalf("the CLI's child %d outlived it", child)
				}
			}
		})
	}
}

func waitChild(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	t.Fatal("the fake CLI started no child")
	return 0
}

// alive reports whether pid runs: it exists and is no zombie, dead and
// waiting to be reaped.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || len(b) <= i+2 || b[i+2] != 'Z' && b[i+2] != 'X'
}
