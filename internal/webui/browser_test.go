package webui_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// screenshotDir, when set, also receives the screenshots the README shows
// (go test ./internal/webui -run Browser -screenshots ../../docs).
var screenshotDir = flag.String("screenshots", "", "also write the README's screenshots into this directory")

// chromiumPath finds Debian's chromium (or KL_CHROMIUM). Without one the
// test skips, or fails under CI=true.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH (CI=true): apt-get install chromium, or set KL_CHROMIUM")
	}
	t.Skip("no chromium on PATH: apt-get install chromium, or set KL_CHROMIUM")
	return ""
}

// browser is one headless Chromium tab that records every console error,
// uncaught exception and failed load of the pages it shows.
type browser struct {
	t    testing.TB
	ctx  context.Context
	mu   sync.Mutex
	errs []string
	// expected are the failed loads the next check lets pass: an error
	// page the test asked for is answered with its status, which Chromium
	// logs.
	expected []string
	shot     string // the test's screenshot directory
}

// expectStatus lets the next checkConsole pass the one log line Chromium
// writes for a page at url answered with status (an error page the test
// means to open).
func (b *browser) expectStatus(url string, status int) {
	b.expected = append(b.expected, fmt.Sprintf("the server responded with a status of %d", status)+"\x00"+url)
}

// newBrowser starts a fresh Chromium (its own profile) for t.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{t: t, ctx: ctx, shot: t.TempDir()}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Listen starts the browser, so that its start-up is no page's time.
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				msg = "log: " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errs = append(b.errs, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// do runs actions in the tab, failing the test on an error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// get runs an action that reads a value.
func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open loads url, waits for the page to be ready and returns how long
// that took, failing the test if the page logged any error.
func (b *browser) open(url string) time.Duration {
	b.t.Helper()
	start := time.Now()
	b.do("open "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	d := time.Since(start)
	b.checkConsole(url)
	return d
}

// checkConsole fails the test if any error was logged since the last check.
func (b *browser) checkConsole(where string) {
	b.t.Helper()
	b.mu.Lock()
	errs := b.errs
	b.errs = nil
	b.mu.Unlock()
	expected := b.expected
	b.expected = nil
next:
	for _, e := range errs {
		for i, x := range expected {
			status, url, _ := strings.Cut(x, "\x00")
			if strings.Contains(e, status) && strings.HasSuffix(e, " "+url) {
				expected = slices.Delete(expected, i, i+1)
				continue next
			}
		}
		b.t.Errorf("%s: %s", where, e)
	}
	for _, x := range expected {
		status, url, _ := strings.Cut(x, "\x00")
		b.t.Errorf("%s: expected %s for %s, which Chromium did not report", where, status, url)
	}
}

// text returns the visible text of the first element matching the CSS
// selector sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return get(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// attrs returns attribute attr of every element matching the CSS selector
// sel (none is no error).
func (b *browser) attrs(sel, attr string) []string {
	b.t.Helper()
	js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.getAttribute(%q))`, sel, attr)
	return get(b, "attributes of "+sel, chromedp.Evaluate[[]string](js))
}

// location is the address the tab shows.
func (b *browser) location() string {
	b.t.Helper()
	return get(b, "location", chromedp.Location())
}

// screenshot saves the whole page as name.png under the test's temp dir
// (and under -screenshots when readme is set), logging the path.
func (b *browser) screenshot(name string, readme bool) {
	b.t.Helper()
	png := get(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.shot, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
	if readme && *screenshotDir != "" {
		dst := filepath.Join(*screenshotDir, "ui-"+name+".png")
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		b.t.Logf("screenshot for the README: %s", dst)
	}
}

// logTiming logs a TIMING line, as the e2e tests do for measured steps.
func logTiming(t testing.TB, what string, d time.Duration) {
	t.Helper()
	t.Logf("TIMING %s %.1fms", what, float64(d.Microseconds())/1000)
}
