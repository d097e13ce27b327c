//go:build !small

package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/chromiumtest"
)

// screenshotDir keeps the Chromium tests' screenshots with the test
// reports (the Makefile's REPORTDIR; .ci/run keeps bin/testreport).
const screenshotDir = "../bin/testreport/screenshots"

// browser is a headless Chromium tab (internal/chromiumtest) whose console
// errors, warnings, uncaught exceptions and logged failures are collected,
// but for the refusals of /run a test provokes.
type browser struct {
	*chromiumtest.Browser
	ctx context.Context
	mu  sync.Mutex
	// expected are the statuses of /run the browser may log as failed
	// loads: the refusals a test provokes (Chrome logs some, not all).
	expected []string
}

// expect makes a failed load of /run with this status no problem.
func (b *browser) expect(status string) {
	b.mu.Lock()
	b.expected = append(b.expected, "status of "+status)
	b.mu.Unlock()
}

func (b *browser) provoked(url, text string) bool {
	if !strings.HasSuffix(url, "/run") {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.expected {
		if strings.Contains(text, e) {
			return true
		}
	}
	return false
}

func newBrowser(t *testing.T) *browser {
	b := &browser{}
	b.Browser = chromiumtest.New(t, chromiumtest.Path(t), 2*time.Minute, b.provoked)
	b.ctx = b.Browser.Ctx
	return b
}

// problems returns and forgets what the console said.
func (b *browser) problems() []string { return b.Problems() }

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// poll waits until js is true in the page (bounded by the browser's
// deadline).
func poll(t *testing.T, b *browser, js string) {
	t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](js)); err != nil {
		t.Fatalf("waiting for %s: %v", js, err)
	}
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(screenshotDir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(p)
	t.Logf("screenshot: %s (%d bytes)", abs, len(png))
}

// noOverflow: at the viewport's width nothing makes the page scroll
// sideways (the tables scroll inside their own boxes).
func noOverflow(t *testing.T, b *browser, page string) {
	t.Helper()
	w := eval[[]int](t, b, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
	if w[0] > w[1] {
		t.Errorf("%s at phone width: the page is %d px wide in a %d px viewport", page, w[0], w[1])
	}
}

// TestChromiumPages drives the pages in a real browser: they load without
// a console error (the console is watched, and the watch itself checked),
// each chart line holds a point per result in range, "run now" adds the
// new result's row without a reload while the progress shows, the result
// and fleet pages show what the store holds, and at a phone's width
// (390 px) no page scrolls sideways. A screenshot of each page is kept.
func TestChromiumPages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Chromium is a process the race detector does not see (make unit runs this test)")
	}
	b := newBrowser(t)
	st := newTestStore(t)
	now := time.Now().Truncate(time.Second)
	sd := seed(t, st, now, 300, sampleDoc(t))
	runID := newID()
	agent := &fakeAgent{st: st, tests: sd.tests, newID: func() string { return runID }, mkDoc: func() []byte { return sampleDoc(t) }}
	srv := httptest.NewServer(Handler(Config{Store: st, Agent: agent, Title: "probe-kitchen", Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)

	// The console's watch works: an error the page's context writes is seen.
	b.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#live")))
	eval[bool](t, b, `console.error("watch check"), true`)
	if p := b.problems(); len(p) != 1 || !strings.Contains(p[0], "watch check") {
		t.Fatalf("the console watch saw %q, want the one check", p)
	}

	t.Run("overview", func(t *testing.T) {
		b.do(t, chromedp.Navigate(srv.URL+"/?range=7d"), chromedp.WaitVisible(chromedp.CSS("#chart-capacity")))
		got := eval[map[string]int](t, b, `Object.fromEntries([...document.querySelectorAll("polyline.line")].map(
			l => [l.dataset.series, l.points.numberOfItems]))`)
		want := map[string]int{"down": sd.inWeek["down"], "up": sd.inWeek["up"], "both at once": sd.inWeek["bidirectional"], "RTT minimum": sd.rtt}
		for k, v := range want {
			if got[k] != v || v == 0 {
				t.Errorf("chart line %q holds %d points, the store %d rows in range", k, got[k], v)
			}
		}
		b.screenshot(t, "chromium-overview.png")
	})

	t.Run("run now", func(t *testing.T) {
		b.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("form.run button")))
		// A mark on the page's window: a reload would lose it.
		eval[bool](t, b, `window.notReloaded = true`)
		if n := eval[int](t, b, `document.querySelectorAll('tr[data-id="`+runID+`"]').length`); n != 0 {
			t.Fatalf("the new result's row is there before the run")
		}
		// The page follows the events before the test starts, or it would
		// miss them.
		poll(t, b, `document.getElementById("status").dataset.stream === "open"`)
		// The test is held running until its progress has shown.
		agent.release = make(chan struct{})
		b.do(t, chromedp.Click(chromedp.CSS("form.run button")))
		// Polls are bounded by the browser's context's deadline.
		poll(t, b, `document.getElementById("status").textContent.includes("Sub-Interval 3, 300.5 Mbit/s")`)
		if !eval[bool](t, b, `[...document.querySelectorAll("form.run button")].every(b => b.disabled)`) {
			t.Error("the run buttons are enabled while a test runs")
		}
		// A page that did not hear of the run (its button enabled) asks
		// anyway: refused politely, said on the page.
		b.expect("409")
		eval[bool](t, b, `(() => { const b = document.querySelectorAll("form.run button")[1]; b.disabled = false; b.click(); return true })()`)
		poll(t, b, `document.getElementById("status").className === "refused"`)
		if s := eval[string](t, b, `document.getElementById("status").textContent`); !strings.Contains(s, sd.tests[0]+" is running") {
			t.Errorf("the refusal says %q", s)
		}
		close(agent.release)
		poll(t, b, `document.querySelector('tr[data-id="`+runID+`"]') !== null`)
		if !eval[bool](t, b, `window.notReloaded === true`) {
			t.Error("the page was reloaded")
		}
		if first := eval[string](t, b, `document.querySelector(".recent tbody tr").dataset.id`); first != runID {
			t.Errorf("the first of the latest results is %s, want the new %s", first, runID)
		}
		if s := eval[string](t, b, `document.getElementById("status").textContent`); !strings.Contains(s, "has ended") {
			t.Errorf("the status line says %q", s)
		}
		agent.wait()
		b.screenshot(t, "chromium-run-now.png")
	})

	// Another origin's page (another port: same site, other origin) posts
	// the form to /run by itself, once without the token and once with it
	// (as if it had leaked): the browser's own Origin and Sec-Fetch-Site
	// make both a 403, and no test starts.
	t.Run("cross-origin POST", func(t *testing.T) {
		b.do(t, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("form.run")))
		tok := eval[string](t, b, `document.querySelector('form.run input[name=csrf]').value`)
		b.expect("403")
		for _, withToken := range []bool{false, true} {
			field := ""
			if withToken {
				field = `<input name="csrf" value="` + tok + `">`
			}
			evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/run"><input name="test" value="%s">%s</form>
<script>document.getElementById("f").submit()</script>`, srv.URL, sd.tests[0], field)
			}))
			b.do(t, chromedp.Navigate(evil.URL))
			// The form's answer, whatever it is, is a page of srv.
			poll(t, b, `location.origin === "`+srv.URL+`" && document.readyState === "complete"`)
			body := eval[string](t, b, `document.body.textContent`)
			evil.Close()
			if !strings.Contains(body, "refused") {
				t.Errorf("the other origin's POST (token %v) got %.80q…", withToken, body)
			}
			if r := agent.Running(); r != "" {
				t.Fatalf("the other origin's POST (token %v) started %s", withToken, r)
			}
		}
	})

	t.Run("result", func(t *testing.T) {
		b.do(t, chromedp.Navigate(srv.URL+"/result/"+runID), chromedp.WaitVisible(chromedp.CSS(".plot img")))
		poll(t, b, `document.querySelector(".plot img").complete`)
		if w := eval[int](t, b, `document.querySelector(".plot img").naturalWidth`); w == 0 {
			t.Error("the plot did not load")
		}
		if s := eval[string](t, b, `document.querySelector(".figures").textContent`); !strings.Contains(s, "321.50 Mbit/s") {
			t.Errorf("the figures say %q", s)
		}
		b.screenshot(t, "chromium-result.png")
	})

	t.Run("fleet", func(t *testing.T) {
		b.do(t, chromedp.Navigate(srv.URL+"/fleet?range=30d"), chromedp.WaitVisible(chromedp.CSS("table.servers")))
		servers := eval[[]string](t, b, `[...document.querySelectorAll("tr[data-server]")].map(r => r.dataset.server)`)
		agents := eval[[]string](t, b, `[...document.querySelectorAll("tr[data-agent]")].map(r => r.dataset.agent)`)
		if fmt.Sprint(sortedCopy(servers)) != fmt.Sprint(sortedCopy(sd.servers)) {
			t.Errorf("servers %v, want %v", servers, sd.servers)
		}
		// The run above wrote probe-1's result.
		if fmt.Sprint(sortedCopy(agents)) != fmt.Sprint(sortedCopy(append([]string{"probe-1"}, sd.agents...))) {
			t.Errorf("probes %v, want %v and probe-1", agents, sd.agents)
		}
		// Each probe's last results (probe-1's: the run's), at most
		// probeRecent, each a link to its page; the missed schedules with
		// why.
		last := eval[map[string][]string](t, b, `Object.fromEntries([...document.querySelectorAll("tr[data-agent]")].map(
			r => [r.dataset.agent, [...r.querySelectorAll("ol.last li")].map(li => li.dataset.id)]))`)
		if got := last["probe-1"]; len(got) != 1 || got[0] != runID {
			t.Errorf("probe-1's last results %v, want the run's %s", got, runID)
		}
		for _, a := range sd.agents {
			if n := len(last[a]); n != probeRecent {
				t.Errorf("%s shows %d last results, want %d", a, n, probeRecent)
			}
		}
		slots := eval[map[string][]string](t, b, `Object.fromEntries([...document.querySelectorAll("tr[data-agent]")].map(
			r => [r.dataset.agent, [...r.querySelectorAll("ul.slots li")].map(li => li.textContent)]))`)
		// seed misses every sixth result: probe-rack's, none of probe-kitchen's.
		if s := slots["probe-rack"]; len(s) != probeRecent || !strings.Contains(s[0], "the agent was asleep") {
			t.Errorf("probe-rack's missed schedules: %q", s)
		}
		if s := slots["probe-kitchen"]; len(s) != 0 {
			t.Errorf("probe-kitchen's missed schedules: %q, want none", s)
		}
		b.do(t, chromedp.Click(chromedp.CSS(`tr[data-agent="probe-1"] ol.last a`)), chromedp.WaitVisible(chromedp.CSS(".plot img")))
		if u := eval[string](t, b, `location.pathname`); u != "/result/"+runID {
			t.Errorf("probe-1's last result links to %s", u)
		}
		b.do(t, chromedp.Navigate(srv.URL+"/fleet?range=30d"), chromedp.WaitVisible(chromedp.CSS("table.agents")))
		b.screenshot(t, "chromium-fleet.png")
	})

	t.Run("phone", func(t *testing.T) {
		b.do(t, chromedp.EmulateViewport(390, 844))
		for _, p := range []struct{ path, wait, shot string }{
			{"/", "#chart-capacity", "chromium-phone-overview.png"},
			{"/result/" + runID, ".plot img", "chromium-phone-result.png"},
			{"/fleet?range=30d", "table.servers", "chromium-phone-fleet.png"},
		} {
			b.do(t, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.wait)))
			noOverflow(t, b, p.path)
			b.screenshot(t, p.shot)
		}
	})

	if p := b.problems(); len(p) > 0 {
		t.Errorf("the browser's console:\n%s", strings.Join(p, "\n"))
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}
