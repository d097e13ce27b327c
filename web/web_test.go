//go:build !small

package web

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// fixture is a page over a memStore with a fakeAgent.
type fixture struct {
	st    store.Store
	agent *fakeAgent
	srv   *httptest.Server
	now   time.Time
	sd    seeded
}

func newFixture(t *testing.T, n int, tests ...string) *fixture {
	t.Helper()
	f := &fixture{st: newTestStore(t), now: time.Now().Truncate(time.Second)}
	f.sd = seed(t, f.st, f.now, n, sampleDoc(t))
	if len(tests) == 0 {
		tests = f.sd.tests
	}
	f.agent = &fakeAgent{st: f.st, tests: tests, newID: newID}
	f.srv = httptest.NewServer(Handler(Config{Store: f.st, Agent: f.agent, Title: "probe <b>", Now: func() time.Time { return f.now }}))
	t.Cleanup(f.srv.Close)
	return f
}

func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestPagesEscapeNames: names from the store and the agent are text on
// every page, never markup (a test, a probe and a server named with a
// script element).
func TestPagesEscapeNames(t *testing.T) {
	const evil = `<script>alert(1)</script>"'&`
	f := newFixture(t, 0, evil)
	r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: evil, Agent: evil, Server: evil, Start: f.now.Add(-time.Hour),
		Direction: "down", Status: store.StatusWarning, Warning: evil, MaxMbps: f64(10), Doc: sampleDoc(t)}
	if err := f.st.Put(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/live", "/fleet", "/result/" + r.ID, "/?test=" + url.QueryEscape(evil)} {
		resp, body := get(t, f.srv.URL+path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>") {
			t.Errorf("%s: a name is markup in the page", path)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the escaped name is not in the page", path)
		}
	}
}

// TestSecurityHeaders: every answer forbids inline script and style,
// framing and sniffing.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, 10)
	for _, path := range []string{"/", "/fleet", "/assets/app.js", "/nothing"} {
		resp, _ := get(t, f.srv.URL+path)
		h := resp.Header
		if c := h.Get("Content-Security-Policy"); !strings.Contains(c, "script-src 'self'") || strings.Contains(c, "unsafe") || !strings.Contains(c, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", path, c)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
}

// TestPagesOnlyGet: pages answer GET and HEAD; other methods are 405, and
// /run takes POST only.
func TestPagesOnlyGet(t *testing.T) {
	f := newFixture(t, 3)
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"HEAD", "/", 200}, {"GET", "/fleet", 200}, {"POST", "/", 405}, {"PUT", "/fleet", 405},
		{"DELETE", "/result/00000000-0000-4000-8000-000000000001", 405}, {"POST", "/events", 405},
		{"GET", "/run", 405}, {"OPTIONS", "/", 405}, {"GET", "/result/../etc/passwd", 404},
		{"GET", "/result/not-a-uuid", 404}, {"GET", "/result/00000000-0000-4000-8000-ffffffffffff", 404},
		{"GET", "/assets/", 404}, {"GET", "/assets/nothing.js", 404},
	} {
		req, _ := http.NewRequest(c.method, f.srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %s, want %d", c.method, c.path, resp.Status, c.want)
		}
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func token(t *testing.T, f *fixture) string {
	_, body := get(t, f.srv.URL+"/")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the overview's forms")
	}
	return m[1]
}

func post(t *testing.T, f *fixture, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.srv.URL+"/run", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRunNowCSRF: "run now" needs the page's token and a same-origin
// request; a forged POST (another site's form, a stale or guessed token)
// is 403 and starts nothing; while a test runs, another is 409 with a
// message.
func TestRunNowCSRF(t *testing.T) {
	f := newFixture(t, 3)
	f.agent.release = make(chan struct{})
	tok := token(t, f)
	test := f.sd.tests[0]
	forged := []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{"test": {test}}, nil},
		{"wrong token", url.Values{"test": {test}, "csrf": {strings.Repeat("0", len(tok))}}, nil},
		{"token's prefix", url.Values{"test": {test}, "csrf": {tok[:len(tok)-1]}}, nil},
		{"other origin", url.Values{"test": {test}, "csrf": {tok}}, map[string]string{"Origin": "http://evil.example"}},
		{"null origin", url.Values{"test": {test}, "csrf": {tok}}, map[string]string{"Origin": "null"}},
		{"cross-site fetch", url.Values{"test": {test}, "csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site fetch", url.Values{"test": {test}, "csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "same-site"}},
	}
	for _, c := range forged {
		if code, body := post(t, f, c.form, c.hdr); code != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", c.name, code, body)
		}
	}
	if r := f.agent.Running(); r != "" {
		t.Fatalf("a forged POST started %q", r)
	}
	if code, _ := post(t, f, url.Values{"test": {"not configured"}, "csrf": {tok}}, nil); code != http.StatusNotFound {
		t.Errorf("an unknown test: %d, want 404", code)
	}
	same := map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"}
	if code, _ := post(t, f, url.Values{"test": {test}, "csrf": {tok}}, same); code != http.StatusSeeOther {
		t.Fatalf("run now: %d, want 303", code)
	}
	if f.agent.Running() != test {
		t.Fatalf("running %q, want %q", f.agent.Running(), test)
	}
	code, body := post(t, f, url.Values{"test": {f.sd.tests[1]}, "csrf": {tok}}, map[string]string{"Accept": "text/plain"})
	if code != http.StatusConflict || !strings.Contains(body, test+" is running") {
		t.Errorf("while a test runs: %d %q, want 409 naming it", code, body)
	}
	close(f.agent.release)
	f.agent.wait()
	code, body = post(t, f, url.Values{"test": {f.sd.tests[1]}, "csrf": {tok}}, map[string]string{"Accept": "text/plain"})
	if code != http.StatusAccepted || !strings.Contains(body, "started") {
		t.Errorf("after the test: %d %q, want 202", code, body)
	}
	f.agent.wait()
}

// TestAssetsSize: the page's own assets (script, styles, icon, templates)
// stay under the 300 KB.
func TestAssetsSize(t *testing.T) {
	total := 0
	for _, fsys := range []fs.FS{assets, templateFiles} {
		fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if !d.IsDir() {
				b, _ := fs.ReadFile(fsys, p)
				total += len(b)
			}
			return nil
		})
	}
	t.Logf("assets and templates: %d bytes", total)
	if total == 0 || total > 300_000 {
		t.Errorf("the page's assets are %d bytes, want (0, 300000]", total)
	}
}

// TestResultPage: a result's figures, its plot as SVG and its document to
// download.
func TestResultPage(t *testing.T) {
	f := newFixture(t, 5)
	rows, _ := f.st.List(context.Background(), store.Filter{Limit: 1})
	id := rows[0].ID
	resp, body := get(t, f.srv.URL+"/result/"+id)
	if resp.StatusCode != 200 || !strings.Contains(body, "/result/"+id+"/plot.svg") || !strings.Contains(body, id) {
		t.Fatalf("result page: %s\n%s", resp.Status, body)
	}
	resp, body = get(t, f.srv.URL+"/result/"+id+"/plot.svg")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(body, "<svg") {
		t.Errorf("plot: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	resp, body = get(t, f.srv.URL+"/result/"+id+"/json")
	if resp.StatusCode != 200 || body != string(sampleDoc(t)) || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("json: %s %v, %d bytes", resp.Status, resp.Header, len(body))
	}
	// A result without a document to draw says why instead of a plot.
	r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: "t", Start: f.now, Status: store.StatusMissed, Warning: "asleep", Doc: []byte(`{"ErrorStatus":3}`)}
	if err := f.st.Put(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, f.srv.URL+"/result/"+r.ID); strings.Contains(body, "plot.svg") || !strings.Contains(body, "No plot") {
		t.Errorf("a result with nothing to draw has a plot")
	}
	if resp, _ := get(t, f.srv.URL+"/result/"+r.ID+"/plot.svg"); resp.StatusCode != 404 {
		t.Errorf("plot of nothing: %s", resp.Status)
	}
}

var pointsRE = regexp.MustCompile(`<polyline class="line [^"]*" data-series="([^"]*)" data-points="(\d+)"`)

// TestChartPoints: each line holds one point per result in range (fewer
// than the resolution) with its figure, and the store reduces a long
// series to the resolution.
func TestChartPoints(t *testing.T) {
	f := newFixture(t, 300)
	_, body := get(t, f.srv.URL+"/?range=7d")
	got := map[string]int{}
	for _, m := range pointsRE.FindAllStringSubmatch(body, -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	want := map[string]int{"down": f.sd.inWeek["down"], "up": f.sd.inWeek["up"], "both at once": f.sd.inWeek["bidirectional"], "RTT minimum": f.sd.rtt}
	for k, v := range want {
		if got[k] != v || v == 0 {
			t.Errorf("line %q: %d points, want %d (the rows in range)", k, got[k], v)
		}
	}
	// A resolution below the rows: at most that many points.
	srv := httptest.NewServer(Handler(Config{Store: f.st, Points: 10, Now: func() time.Time { return f.now }}))
	defer srv.Close()
	_, body = get(t, srv.URL+"/?range=7d")
	for _, m := range pointsRE.FindAllStringSubmatch(body, -1) {
		if n, _ := strconv.Atoi(m[2]); n > 10 || n == 0 {
			t.Errorf("line %q at resolution 10: %d points", m[1], n)
		}
	}
}

// TestFleetPage: every server and probe of the store, their counts.
func TestFleetPage(t *testing.T) {
	f := newFixture(t, 60)
	_, body := get(t, f.srv.URL+"/fleet?range=30d")
	for _, s := range f.sd.servers {
		if !strings.Contains(body, `data-server="`+s+`"`) {
			t.Errorf("server %s is not on the fleet page", s)
		}
	}
	for _, a := range f.sd.agents {
		if !strings.Contains(body, `data-agent="`+a+`"`) {
			t.Errorf("probe %s is not on the fleet page", a)
		}
	}
	if !strings.Contains(body, "missed") {
		t.Error("no missed tests in the status mix")
	}
}

// TestEventsStream: /events carries the running test's state, its summed
// Sub-Intervals (not each connection's) and its end as "result".
func TestEventsStream(t *testing.T) {
	f := newFixture(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	next := func() (string, string) {
		var ev, data string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "event: "):
				ev = l[7:]
			case strings.HasPrefix(l, "data: "):
				data = l[6:]
			case l == "" && ev != "":
				return ev, data
			}
		}
		t.Fatalf("the stream ended: %v (events %v)", sc.Err(), events)
		return "", ""
	}
	if ev, data := next(); ev != "state" || data != `{"running":""}` {
		t.Fatalf("first event %s %s", ev, data)
	}
	if err := f.agent.RunNow(f.sd.tests[0]); err != nil {
		t.Fatal(err)
	}
	for {
		ev, data := next()
		events = append(events, ev+" "+data)
		if ev == "result" {
			break
		}
	}
	all := strings.Join(events, "\n")
	for _, want := range []string{`state {"running":"home-down"}`, `"interval":1,"mbps":100.5`, `"interval":3,"mbps":300.5`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in\n%s", want, all)
		}
	}
	if strings.Contains(all, `"mbps":1.5`) {
		t.Errorf("a connection's own Sub-Interval is in the stream:\n%s", all)
	}
	f.agent.wait()
}

// TestOverviewPending: the overview says how many results wait in the
// agent's spool, and says nothing while none wait.
func TestOverviewPending(t *testing.T) {
	st := newTestStore(t)
	var n atomic.Int64
	srv := httptest.NewServer(Handler(Config{Store: st, Pending: func() int { return int(n.Load()) }}))
	t.Cleanup(srv.Close)
	if _, body := get(t, srv.URL+"/"); strings.Contains(body, `class="pending"`) {
		t.Errorf("nothing waits, yet the overview says so:\n%s", body)
	}
	n.Store(7)
	if _, body := get(t, srv.URL+"/"); !strings.Contains(body, `<p class="pending" role="status">7 result(s) wait`) {
		t.Errorf("7 results wait, the overview does not say so:\n%s", body)
	}
}
