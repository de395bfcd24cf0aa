package keyring

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
)

// ModeError is a key file that users outside its owner and group may read
// or write: whoever reads it opens everything encrypted at rest, so it is
// refused, as ssh refuses a private key others can read.
type ModeError struct {
	File string
	Mode fs.FileMode
}

func (e *ModeError) Error() string {
	return fmt.Sprintf("keyring: the key file %s has mode %04o: any user of the machine may read or change it", e.File, e.Mode.Perm())
}

// Hint says how to fix the file's mode.
func (e *ModeError) Hint() string {
	return fmt.Sprintf("run chmod 600 %s (or 0400); in Kubernetes set defaultMode: 0400 on the secret's volume, in Docker mode: 0400 on the secret", e.File)
}

// CheckFileMode checks who may use the key file (its target, when it is a
// symbolic link, as a mounted secret is). Others' access (any of o=rwx) is
// a *ModeError. Its group's is a warning, not a refusal: Kubernetes makes
// a secret's files group-readable (0440) whenever the pod sets an fsGroup,
// a deliberate choice of who shares the key. It returns that warning, or
// "". Windows keeps no such mode bits: nothing is checked there.
func CheckFileMode(file string) (warning string, err error) {
	if runtime.GOOS == "windows" {
		return "", nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("keyring: read the key file: %w", err)
	}
	mode := fi.Mode().Perm()
	switch {
	case mode&0o007 != 0:
		return "", &ModeError{File: file, Mode: mode}
	case mode&0o070 != 0:
		return fmt.Sprintf("the key file %s has mode %04o: its group can read it; chmod 600 %s unless the group is meant to share the key", file, mode, file), nil
	}
	return "", nil
}
