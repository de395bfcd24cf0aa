package graphtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// A Respelling re-serializes a state document the way another JSON writer
// does: the same meaning in other bytes (key order, escapes, whitespace,
// number spelling).
type Respelling struct {
	Name  string
	Apply func(tb testing.TB, doc []byte) []byte
}

// Respellings are the writers states are commonly re-serialized by, each
// run for real: Python's json.dumps(sort_keys=True, indent=2), jq -S ., and
// Go's encoding/json on the decoded map.
var Respellings = []Respelling{
	{"python", Python},
	{"jq", JQ},
	{"gomap", GoMap},
}

// Python re-serializes doc with python3's json module: keys sorted, two
// spaces, non-ASCII as \uXXXX, integers exact, floats as repr writes them.
// Without python3 on PATH the test is skipped (failed when CI=true).
func Python(tb testing.TB, doc []byte) []byte {
	tb.Helper()
	return run(tb, doc, "python3", "-c",
		`import json,sys; sys.stdout.write(json.dumps(json.load(sys.stdin), sort_keys=True, indent=2) + "\n")`)
}

// JQ re-serializes doc with `jq -S .`: keys sorted, two spaces, nothing but
// quotes, backslashes and control characters escaped. jq reads numbers as
// doubles, so use it only on documents whose numbers are doubles. Without jq
// on PATH the test is skipped (failed when CI=true).
func JQ(tb testing.TB, doc []byte) []byte {
	tb.Helper()
	return run(tb, doc, "jq", "-S", ".")
}

// GoMap re-serializes doc as Go code that decodes a state into
// map[string]any does, numbers kept as written (json.Decoder.UseNumber):
// compact, keys sorted, HTML-safe escapes.
func GoMap(tb testing.TB, doc []byte) []byte {
	tb.Helper()
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		tb.Fatalf("gomap: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("gomap: %v", err)
	}
	return out
}

func run(tb testing.TB, doc []byte, name string, args ...string) []byte {
	tb.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not installed: %v", name, err)
		}
		tb.Skipf("%s is not installed: %v", name, err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(doc)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s: %v\n%s", name, err, stderr.Bytes())
	}
	return out
}

var serialRE = regexp.MustCompile(`"serial":\s*(\d+)`)

// BumpSerial returns doc, a document in either CLI's layout, with its
// serial one higher: what a writer that changed nothing else but wants to
// commit under a lock must send.
func BumpSerial(tb testing.TB, doc []byte) []byte {
	tb.Helper()
	_, _, n, err := serialAt(doc)
	if err == nil {
		doc, err = WithSerial(doc, n+1)
	}
	if err != nil {
		tb.Fatalf("bump serial: %v in %.200q", err, doc)
	}
	return doc
}
