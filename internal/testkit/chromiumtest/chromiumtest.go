// Package chromiumtest starts a headless Chromium for tests that drive a
// page in a real browser, and collects what the browser's console says:
// errors, warnings, uncaught exceptions and logged failures (CSP
// violations, failed loads), and the tab's loads (each response's status,
// each failed request). The browser is Debian's chromium (or
// CHROMIUM): a test without it skips, saying so, and fails in CI
// (CI=true), which must have it (.ci/run installs it).
package chromiumtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// Path is the browser's path, or the test ends: skipped where it is
// missing, failed in CI.
func Path(t testing.TB) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if p, err := exec.LookPath(path); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Chromium at %s: CI must have it (apt-get install chromium)", path)
	}
	t.Skipf("no Chromium at %s (apt-get install chromium, or set CHROMIUM)", path)
	return ""
}

// Browser is a headless Chromium tab (Ctx, for chromedp) whose console is
// watched.
type Browser struct {
	Ctx context.Context
	mu  sync.Mutex
	bad []string
	// loads are the tab's responses and failed requests; urls are the
	// requests' URLs by id, for a failure, whose event names none.
	loads []Load
	urls  map[network.RequestID]string
	// ignore says a logged load failure of url is a test's own (a refusal
	// it provokes), no problem.
	ignore func(url, text string) bool
}

// New starts the browser at path, as root in a container allows
// (--no-sandbox) with a fresh profile, for at most limit; it ends with t.
// ignore, when not nil, excuses logged load failures a test provokes.
func New(t testing.TB, path string, limit time.Duration, ignore func(url, text string) bool) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1200, 900))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	b := &Browser{ignore: ignore, urls: map[network.RequestID]string{}}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(bcancel)
	b.Ctx = bctx
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return b
}

// Load is a request of the tab: its response's status, or why it failed
// (Status 0).
type Load struct {
	URL    string
	Status int64
	Failed string
}

func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.mu.Lock()
		b.urls[ev.RequestID] = ev.Request.URL
		b.mu.Unlock()
	case *network.EventResponseReceived:
		b.mu.Lock()
		b.loads = append(b.loads, Load{URL: ev.Response.URL, Status: ev.Response.Status})
		b.mu.Unlock()
	case *network.EventLoadingFailed:
		b.mu.Lock()
		b.loads = append(b.loads, Load{URL: b.urls[ev.RequestID], Failed: ev.ErrorText})
		b.mu.Unlock()
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			msg = fmt.Sprintf("log %s %s: %s (%s)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			if b.ignore != nil && b.ignore(ev.Entry.URL, ev.Entry.Text) {
				msg = ""
			}
		}
	}
	if msg != "" {
		b.mu.Lock()
		b.bad = append(b.bad, msg)
		b.mu.Unlock()
	}
}

// Problems returns and forgets what the console said.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.bad
	b.bad = nil
	return p
}

// Loads returns and forgets the tab's loads.
func (b *Browser) Loads() []Load {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.loads
	b.loads = nil
	clear(b.urls)
	return l
}

// Screenshot saves a PNG of the whole page as name in the module's
// bin/testreport/screenshots (the Makefile's REPORTDIR, which CI keeps
// with the test reports) and logs where.
func (b *Browser) Screenshot(t testing.TB, name string) {
	t.Helper()
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	root, err := golden.ModuleRoot()
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(root, "bin", "testreport", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

// Do runs steps in the tab, or ends the test.
func (b *Browser) Do(t testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// Eval is the value of js in the page, or the test ends.
func Eval[T any](t testing.TB, b *Browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// Poll waits until js is true in the page, bounded by the browser's
// limit (New).
func (b *Browser) Poll(t testing.TB, js string) {
	t.Helper()
	if _, err := chromedp.Run(b.Ctx, chromedp.Poll[bool](js)); err != nil {
		t.Fatalf("waiting for %s: %v", js, err)
	}
}
