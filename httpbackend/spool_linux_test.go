package httpbackend

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/kilolock/kilolock/graph"
)

// residentKiB is how much of the mapping that holds m is resident in this
// process, from /proc/self/smaps.
func residentKiB(t *testing.T, m []byte) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&m[0])))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && a <= addr && addr < b
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			n, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// TestSpooledBodyGivesPagesBack: a pass over a spooled body that tells
// bodyDone how far it got (as the engine's parse of a POST does) leaves
// about a megabyte of it resident, where a pass that does not leaves all
// of it; the bytes read after are the body's still, and the checksum,
// read from the spool's file, touches none of its pages.
func TestSpooledBodyGivesPagesBack(t *testing.T) {
	skipUnspooled(t)
	h := newEnv(t, "", Options{}).h
	want := bytes.Repeat([]byte("fedcba9876543210"), (24<<20)/16)
	ri := &reqInfo{w: httptest.NewRecorder()}
	r := httptest.NewRequest("POST", "/v1/states/s", bytes.NewReader(want))
	r.ContentLength = int64(len(want))
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
	defer h.releaseBodies(ri)
	body, err := h.readBody(r, h.bodyLimit)
	if err != nil {
		t.Fatal(err)
	}
	done := bodyDone(ri, body)
	if done == nil {
		t.Fatal("a spooled body has no bodyDone")
	}
	pass := func(done func(from, to int)) [md5.Size]byte {
		h := md5.New()
		p := graph.Progress{Done: done}
		for at := 0; at < len(body); at += graph.ProgressStep {
			end := min(at+graph.ProgressStep, len(body))
			h.Write(body[at:end])
			p.At(end)
		}
		p.Flush(len(body))
		return [md5.Size]byte(h.Sum(nil))
	}
	sum := pass(nil)
	if kib := residentKiB(t, body); kib < 20<<10 {
		t.Fatalf("after a pass that tells nothing, %d KiB of the 24 MiB body resident; want all of it", kib)
	}
	forgetPages(body, 0, len(body))
	if again := pass(done); again != sum {
		t.Fatalf("MD5 %x after giving pages back, %x before", again, sum)
	}
	if kib := residentKiB(t, body); kib > 2<<10 {
		t.Errorf("after a pass that tells bodyDone, %d KiB of the 24 MiB body resident; want at most 2 MiB", kib)
	}
	forgetPages(body, 0, len(body))
	if fromFile := bodyMD5(body, bodySpool(ri, body)); fromFile != sum {
		t.Fatalf("MD5 from the spool %x, from the body %x", fromFile, sum)
	}
	if kib := residentKiB(t, body); kib > 64 {
		t.Errorf("the checksum from the spool left %d KiB of the body resident; want none", kib)
	}
	if !bytes.Equal(body, want) {
		t.Error("the body read back after its pages went is not the one sent")
	}
}
