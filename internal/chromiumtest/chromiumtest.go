// Package chromiumtest starts a headless Chromium for tests that drive a
// page in a real browser, and collects what the browser's console says:
// errors, warnings, uncaught exceptions and logged failures (CSP
// violations, failed loads). The browser is Debian's chromium (or
// CHROMIUM): a test without it skips, saying so, and fails in CI
// (CI=true), which must have it (.ci/run installs it).
package chromiumtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
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
	b := &Browser{ignore: ignore}
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(bcancel)
	b.Ctx = bctx
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return b
}

func (b *Browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
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
