package keyring_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/keyring"
)

func TestParse(t *testing.T) {
	a, b := keyring.Generate(), keyring.Generate()
	tests := []struct {
		name    string
		text    string
		keys    int
		wantErr string
	}{
		{"one key", a, 1, ""},
		{"file with comments", "# active first\n" + a + "\n\n" + b + "\n", 2, ""},
		{"commas", a + ", " + b, 2, ""},
		{"a key twice counts once", a + "\n" + a, 1, ""},
		{"url alphabet without padding", strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(a), "="), 1, ""},
		{"empty", "\n# nothing\n", 0, "no key"},
		{"short key", "c2hvcnQ=", 0, "line 1: a key is 32 bytes, this one 5"},
		{"not base64", a + "\nnot a key!", 0, "line 2: not a base64-encoded key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := keyring.Parse([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse = %v, want an error with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), a) {
					t.Fatalf("the error %q shows a key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.IDs()) != tt.keys {
				t.Fatalf("keys = %v, want %d", r.IDs(), tt.keys)
			}
		})
	}
}

// The first key wraps; every key of the ring unwraps; a ring without the
// wrapping key says which key it lacks, and a changed byte does not open.
func TestWrapUnwrap(t *testing.T) {
	oldKey, newKey := keyring.Generate(), keyring.Generate()
	old, err := keyring.Parse([]byte(oldKey))
	if err != nil {
		t.Fatal(err)
	}
	dk, err := keyring.NewDataKey()
	if err != nil {
		t.Fatal(err)
	}
	id, wrapped, err := old.Wrap(dk)
	if err != nil || id != old.Active() {
		t.Fatalf("Wrap = %s, %v; want the active key %s", id, err, old.Active())
	}
	sealed := dk.Seal([]byte("hunter2"), []byte("aad"))

	rotated, _ := keyring.Parse([]byte(newKey + "\n" + oldKey))
	if rotated.Active() == id || !rotated.Has(id) {
		t.Fatalf("rotated ring %v: want a new active key and the old one", rotated.IDs())
	}
	back, err := rotated.Unwrap(id, wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := back.Open(sealed, []byte("aad")); err != nil || string(got) != "hunter2" {
		t.Fatalf("Open with the unwrapped key = %q, %v", got, err)
	}
	if back.Address(sha256.Sum256([]byte("x"))) != dk.Address(sha256.Sum256([]byte("x"))) {
		t.Fatal("the unwrapped key addresses differently")
	}
	if _, err := back.Open(sealed, []byte("other aad")); !errors.Is(err, keyring.ErrDecrypt) {
		t.Fatalf("Open with another aad = %v, want ErrDecrypt", err)
	}
	changed := bytes.Clone(sealed)
	changed[len(changed)-1] ^= 1
	if _, err := back.Open(changed, []byte("aad")); !errors.Is(err, keyring.ErrDecrypt) {
		t.Fatalf("Open of a changed ciphertext = %v, want ErrDecrypt", err)
	}

	other, _ := keyring.Parse([]byte(newKey))
	if _, err := other.Unwrap(id, wrapped); err == nil || !strings.Contains(err.Error(), id) {
		t.Fatalf("Unwrap without the key = %v, want an error naming %s", err, id)
	}
}

// Seal hides the plaintext and never repeats itself; the address of a
// hash is not the hash and depends on the key.
func TestSealHidesPlaintext(t *testing.T) {
	dk, _ := keyring.NewDataKey()
	secret := []byte("correct horse battery staple")
	a, b := dk.Seal(secret, nil), dk.Seal(secret, nil)
	if bytes.Contains(a, secret) || bytes.Equal(a, b) {
		t.Fatal("sealed bytes show the plaintext or repeat")
	}
	h := sha256.Sum256(secret)
	other, _ := keyring.NewDataKey()
	if addr := dk.Address(h); addr == h || addr == other.Address(h) {
		t.Fatal("the address is the plain hash, or does not depend on the key")
	}
}

func TestLoad(t *testing.T) {
	fileKey, envKey := keyring.Generate(), keyring.Generate()
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := keyring.Load(file, envKey)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := keyring.Parse([]byte(fileKey))
	if err != nil {
		t.Fatal(err)
	}
	if want := alone.Active(); r.Active() != want || len(r.IDs()) != 2 {
		t.Fatalf("Load = %v, want the file's key %s active and the env's too", r.IDs(), want)
	}
	if r, err := keyring.Load("", ""); r != nil || err != nil {
		t.Fatalf("Load of nothing = %v, %v; want nil, nil", r, err)
	}
	if _, err := keyring.Load(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
	// A key file named but empty (a secret not mounted) must not turn
	// encryption off, even with KL_ENCRYPTION_KEY set.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("# keys\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"", envKey} {
		if r, err := keyring.Load(empty, env); err == nil || !strings.Contains(err.Error(), "no key") {
			t.Errorf("Load of a key file without keys (env %q) = %v, %v; want an error saying it holds no key", env, r, err)
		}
	}
}

// TestRingPrintsNoKey: a ring or key printed, however, shows IDs only.
func TestRingPrintsNoKey(t *testing.T) {
	k := keyring.Generate()
	r, err := keyring.Parse([]byte(k))
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(k)
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		got := fmt.Sprintf(format, r)
		if !strings.Contains(got, r.Active()) || strings.Contains(got, k) || strings.Contains(got, fmt.Sprint(secret[:8])[1:12]) {
			t.Errorf("Sprintf(%q, ring) = %s; want the key's ID and none of its bytes", format, got)
		}
		dk, err := keyring.NewDataKey()
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf(format, dk); got != "keyring.DataKey(hidden)" {
			t.Errorf("Sprintf(%q, data key) = %s; want it hidden", format, got)
		}
	}
}

// TestLoadRefusesOpenKeyFile: a key file others may read is refused, as
// ssh refuses such a private key, with the mode and the chmod to run; one
// its group may read loads, with a warning; 0600 and 0400 load quietly. A
// symbolic link (a mounted secret) is judged by its target.
func TestLoadRefusesOpenKeyFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte(keyring.Generate()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode          os.FileMode
		refused, warn bool
	}{
		{0o644, true, false}, {0o604, true, false}, {0o602, true, false}, {0o666, true, false},
		{0o640, false, true}, {0o440, false, true},
		{0o600, false, false}, {0o400, false, false},
	} {
		if err := os.Chmod(file, tc.mode); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{file, link} {
			r, err := keyring.Load(path, "")
			var me *keyring.ModeError
			switch {
			case tc.refused && (!errors.As(err, &me) || r != nil):
				t.Errorf("Load of a %04o key file %s = %v, %v; want a *ModeError", tc.mode, path, r, err)
			case tc.refused && (!strings.Contains(err.Error(), fmt.Sprintf("%04o", tc.mode)) || !strings.Contains(me.Hint(), "chmod 600 "+path)):
				t.Errorf("refusal %q, hint %q: want the mode and the chmod to run", err, me.Hint())
			case !tc.refused && (err != nil || r == nil):
				t.Errorf("Load of a %04o key file = %v, %v; want it loaded", tc.mode, r, err)
			}
			warning, err := keyring.CheckFileMode(path)
			if !tc.refused && (err != nil || (warning != "") != tc.warn) {
				t.Errorf("CheckFileMode of a %04o key file = %q, %v; want a warning: %v", tc.mode, warning, err, tc.warn)
			}
		}
	}
}
