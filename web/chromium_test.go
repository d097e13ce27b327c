//go:build !small

package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/testkit/chromiumtest"
)

// browser is a headless Chromium tab (internal/testkit/chromiumtest) whose console
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
	b.Do(t, steps...)
}

func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	return chromiumtest.Eval[T](t, b.Browser, js)
}

func poll(t *testing.T, b *browser, js string) {
	t.Helper()
	b.Poll(t, js)
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

// nothingOverflows: at the viewport's width no element of the page
// reaches past the viewport's sides or scrolls its content sideways; the
// latest results' table in particular fits its box, which does not
// scroll (docs/web.md, "Overview").
func nothingOverflows(t *testing.T, b *browser, page string) {
	t.Helper()
	got := eval[[]string](t, b, `(() => {
		const vw = document.documentElement.clientWidth, out = [];
		const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
			(typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/).join(".") : "");
		for (const el of document.querySelectorAll("body *")) {
			const r = el.getBoundingClientRect();
			if (r.width > 0 && (r.left < 0 || r.right > vw)) out.push(name(el) + " spans x " + Math.round(r.left) + "-" + Math.round(r.right) + " of " + vw);
			if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth) out.push(name(el) + " scrolls: " + el.scrollWidth + " px of content in " + el.clientWidth);
		}
		const recent = document.querySelector("table.recent");
		if (!recent) out.push("no latest results' table");
		for (const el of recent ? [recent, recent.closest(".scroll")] : []) {
			if (el && el.scrollWidth > el.clientWidth) out.push(name(el) + ": scrollWidth " + el.scrollWidth + " > clientWidth " + el.clientWidth);
		}
		return out.length > 12 ? out.slice(0, 12).concat(["and " + (out.length - 12) + " more"]) : out;
	})()`)
	if len(got) > 0 {
		t.Errorf("%s at phone width overflows sideways:\n%s", page, strings.Join(got, "\n"))
	}
}

// onScreen: on the phone, the tests' table shows each test's capacity,
// its next run and its "Run now" button without scrolling it sideways:
// each lies inside the viewport and its table's box, and is what the page
// shows at its centre (not clipped by the table's scrolling box).
func onScreen(t *testing.T, b *browser) {
	t.Helper()
	got := eval[[]string](t, b, `(() => {
		const seen = el => {
			if (!el) return "missing";
			const r = el.getBoundingClientRect(), vw = document.documentElement.clientWidth;
			if (r.width === 0 || r.left < 0 || r.right > vw) return "at x " + Math.round(r.left) + "-" + Math.round(r.right) + " of " + vw;
			const box = el.closest(".scroll");
			if (box) {
				const b = box.getBoundingClientRect();
				if (r.left < b.left || r.right > b.right) return "outside its table's box";
			}
			el.scrollIntoView({block: "center", inline: "nearest"});
			const c = el.getBoundingClientRect();
			const at = document.elementFromPoint(c.left + c.width / 2, c.top + c.height / 2);
			return at && (el === at || el.contains(at)) ? "" : "covered";
		};
		const t = document.querySelector("table.tests");
		const cell = t && t.querySelector("tbody tr td.cap");
		const run = t && [...t.querySelectorAll("button")].find(x => x.textContent.includes("Run now"));
		const next = t && t.querySelector("tbody tr td.next time");
		// The capacity is labelled: its column's head, or its own label.
		const head = t && [...t.querySelectorAll("thead th")].find(th => th.textContent.includes("Max Mbit/s"));
		const label = cell && getComputedStyle(cell, "::before").content.includes("Max Mbit/s");
		return [cell ? seen(cell) : "no capacity cell", label ? "" : seen(head), seen(run), seen(next)];
	})()`)
	for i, what := range []string{"a test's capacity", "the capacity's label", `"Run now"`, "a test's next run"} {
		if got[i] != "" {
			t.Errorf("overview at 390 px: %s is not on screen: %s", what, got[i])
		}
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
	// The first test's slot has come (it waits for the test lock); the
	// second's is 4 minutes off; the third has none. The run below draws
	// the first's next slot, as the agent's schedule loop does.
	soon, redrawn := now.Add(4*time.Minute), now.Add(90*time.Minute)
	agent.setNext(sd.tests[0], now.Add(-time.Minute))
	agent.setNext(sd.tests[1], soon)
	agent.redraw = func(string) time.Time { return redrawn }
	// nextRun is the next run's text in a test's row on the page.
	nextRun := func(test string) string {
		return eval[string](t, b, `(() => {
			const r = [...document.querySelectorAll("table.tests tr[data-test]")].find(r => r.dataset.test === `+jsString(test)+`);
			const c = r && r.querySelector("td.next");
			return c && c.getClientRects().length > 0 ? c.innerText : "not shown";
		})()`)
	}
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
		if got, want := nextRun(sd.tests[1]), soon.Local().Format("2006-01-02 15:04")+" (in 4 min)"; got != want {
			t.Errorf("%s's next run shows %q, want %q", sd.tests[1], got, want)
		}
		if got := nextRun(sd.tests[0]); !strings.HasSuffix(got, "(due now)") {
			t.Errorf("%s's next run shows %q, want it due", sd.tests[0], got)
		}
		if got := nextRun(sd.tests[2]); got != "none scheduled" {
			t.Errorf("%s's next run shows %q, want none", sd.tests[2], got)
		}
		// The script keeps the words current (here: a page shown again),
		// in inWords' words; each time is 10 s off a minute's rounding.
		for _, d := range []time.Duration{20 * time.Second, 4*time.Minute + 10*time.Second, 2*time.Hour + 5*time.Minute + 10*time.Second,
			3*24*time.Hour + time.Hour + 20*time.Minute + 10*time.Second, -time.Hour} {
			got := eval[string](t, b, `(() => {
				const c = [...document.querySelectorAll("table.tests tr[data-test]")].find(r => r.dataset.test === `+jsString(sd.tests[1])+`).querySelector("td.next");
				c.querySelector("time").dateTime = new Date(Date.now() + `+fmt.Sprint(d.Milliseconds())+`).toISOString();
				document.dispatchEvent(new Event("visibilitychange"));
				return c.querySelector(".in").textContent;
			})()`)
			if want := "(" + inWords(d) + ")"; got != want {
				t.Errorf("the script's words for a next run %s off: %q, want %q", d, got, want)
			}
		}
		b.Screenshot(t, "chromium-overview.png")
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
		// The slot drawn after the run (after its row was stored) shows
		// without a reload.
		agent.wait()
		poll(t, b, `(() => {
			const r = [...document.querySelectorAll("table.tests tr[data-test]")].find(r => r.dataset.test === `+jsString(sd.tests[0])+`);
			const c = r && r.querySelector("td.next time");
			return !!c && c.dateTime === `+jsString(redrawn.UTC().Format(time.RFC3339))+`;
		})()`)
		if got, want := nextRun(sd.tests[0]), redrawn.Local().Format("2006-01-02 15:04")+" (in 1 h 30 min)"; got != want {
			t.Errorf("after the run, %s's next run shows %q, want %q", sd.tests[0], got, want)
		}
		b.Screenshot(t, "chromium-run-now.png")
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
		b.Screenshot(t, "chromium-result.png")
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
		b.Screenshot(t, "chromium-fleet.png")
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
			if p.path == "/" {
				nothingOverflows(t, b, p.path)
				onScreen(t, b)
			}
			b.Screenshot(t, p.shot)
		}
	})

	if p := b.problems(); len(p) > 0 {
		t.Errorf("the browser's console:\n%s", strings.Join(p, "\n"))
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
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
