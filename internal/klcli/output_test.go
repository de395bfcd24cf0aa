package klcli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/kilolock/kilolock/client"
)

// TestEscapedWriter: what kl prints cannot drive a terminal. Control
// characters (C0 but tab and newline, DEL, C1) come out as \u00XX; text,
// UTF-8 and JSON pass as they are, and escaped JSON stays valid and equal.
func TestEscapedWriter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "alice@laptop\tapply\n", "alice@laptop\tapply\n"},
		{"utf-8", "café → 日本\n", "café → 日本\n"},
		{"title", "x\x1b]0;pwned\x07y", `x\u001b]0;pwned\u0007y`},
		{"clear screen", "\x1b[2J\x1b[H", `\u001b[2J\u001b[H`},
		{"OSC 52 clipboard", "\x1b]52;c;Y3VybCBldmls\x1b\\", `\u001b]52;c;Y3VybCBldmls\u001b\`},
		{"carriage return", "ok\rEVIL", `ok\u000dEVIL`},
		{"DEL and NUL", "a\x7fb\x00c", `a\u007fb\u0000c`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"stray byte", "a\xc2b\xff", "a\xc2b\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := escaped(&out).Write([]byte(tc.in))
			if err != nil || n != len(tc.in) {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(tc.in))
			}
			if out.String() != tc.want {
				t.Errorf("escaped %q = %q, want %q", tc.in, out.String(), tc.want)
			}
		})
	}

	// JSON through the writer: encoding/json escapes C0 itself, and the
	// writer's escapes of DEL and C1 are JSON's own.
	v := map[string]string{"who": "\x1b]0;x\x07 \u009b \x7f"}
	var out bytes.Buffer
	enc := json.NewEncoder(escaped(&out))
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["who"] != v["who"] {
		t.Errorf("JSON through the writer: %q, %v; want it to decode to %q", out.String(), err, v["who"])
	}
	for _, b := range out.Bytes() {
		if b == 0x1b || b == 0x7f || b == 0x07 {
			t.Fatalf("JSON through the writer holds a control byte: %q", out.String())
		}
	}
}

// TestReportEscapes: an error a server sent, its message and hint holding
// escapes, is reported with them escaped.
func TestReportEscapes(t *testing.T) {
	var out bytes.Buffer
	Report(&out, &client.Error{Status: 423, Body: client.ErrorBody{Error: "locked", Message: "held by \x1b]0;owned\x07", Hint: "ask \x1b[2J"}})
	if bytes.ContainsAny(out.Bytes(), "\x1b\x07") {
		t.Fatalf("Report printed control characters: %q", out.String())
	}
	if want := "kl: held by \\u001b]0;owned\\u0007\nhint: ask \\u001b[2J\n"; out.String() != want {
		t.Errorf("Report = %q, want %q", out.String(), want)
	}
}
