//go:build !small

package collector

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/testkit/chromiumtest"
	"github.com/udpstp/udpstp/store"
)

// fleetUpload is one result a probe uploads in TestChromiumFleetPage, and
// what the collector makes of it (ResultOf: the figures the page shows).
type fleetUpload struct {
	probe string
	res   *store.Result
}

// TestChromiumFleetPage drives the page a collector serves (PageHandler,
// plain HTTP on loopback as --http is) in Chromium, over results three
// probes uploaded through the collector's TLS listener with their own
// certificates, to three servers, with three real documents and a missed
// schedule. The fleet page lists every server with its tests, status mix
// and capacity histogram, and every probe with its tests, missed
// schedules, last maximum and last results, each a link to a result page
// whose plot loads; the enrolled probes without results in the range
// (one silent since an old upload and revoked, one that never uploaded)
// and a revoked probe with results are marked so; every request of the
// pages succeeds; the console stays quiet; /metrics counts the uploads.
// Screenshots are kept.
func TestChromiumFleetPage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Chromium is a process the race detector does not see (make unit runs this test)")
	}
	b := chromiumtest.New(t, chromiumtest.Path(t), 2*time.Minute, nil)
	g := newRig(t, Config{})
	now := time.Now().Truncate(time.Second)
	servers := []string{"198.18.0.1:25000", "198.18.0.2:25000", "[2001:db8::1]:25000"}
	docs := map[string][]byte{}
	for _, sv := range servers {
		docs[sv] = fleetDoc(t, map[string]string{servers[0]: "ds_default_v4", servers[1]: "us_default_v4", servers[2]: "ds_multi_conn_c2"}[sv])
	}
	var ups []fleetUpload
	for i, p := range []string{"home-0001", "home-0002", "home-0003"} {
		c := g.client(g.enrol(p))
		send := func(body []byte) {
			resp, msg := g.post(c, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s's upload: %s %s", p, resp.Status, msg)
			}
			r, err := ResultOf(body, p)
			if err != nil {
				t.Fatal(err)
			}
			ups = append(ups, fleetUpload{probe: p, res: r})
		}
		// Probe i tests each server, an hour apart, the newest first for
		// home-0001; home-0003 also missed a schedule.
		for j, sv := range servers {
			start := now.Add(-time.Duration(10*i+j+1) * time.Hour)
			send(fmt.Appendf(nil, `{"id":"00000000-0000-4000-8000-%06d%06d","test":"down","server":%q,"start":%q,"end":%q,"doc":%s}`,
				i, j, sv, start.Format(time.RFC3339), start.Add(10*time.Second).Format(time.RFC3339), docs[sv]))
		}
		if i == 2 {
			start := now.Add(-30 * time.Minute)
			send(fmt.Appendf(nil, `{"id":"00000000-0000-4000-8000-%06d999999","test":"down","server":%q,"start":%q,"status":"missed","warning":"the probe was asleep"}`,
				i, servers[0], start.Format(time.RFC3339)))
		}
	}

	// home-0004 was enrolled and never uploaded; home-0005 uploaded once,
	// ten days ago (before the page's 7 days), and was revoked; home-0002
	// was revoked after its uploads (it stays in the probes' table).
	g.enrol("home-0004")
	old := now.Add(-10 * 24 * time.Hour)
	if resp, msg := g.post(g.client(g.enrol("home-0005")), fmt.Appendf(nil, `{"id":"00000000-0000-4000-8000-000005000000","test":"down","server":%q,"start":%q,"end":%q,"doc":%s}`,
		servers[0], old.Format(time.RFC3339), old.Add(10*time.Second).Format(time.RFC3339), docs[servers[0]])); resp.StatusCode != http.StatusOK {
		t.Fatalf("home-0005's upload: %s %s", resp.Status, msg)
	}
	revoked := time.Now() // after the enrolments
	for _, p := range []string{"home-0002", "home-0005"} {
		if n, err := g.st.(store.Probes).Revoke(context.Background(), p, revoked); err != nil || n != 1 {
			t.Fatalf("revoking %s: %d, %v", p, n, err)
		}
	}

	ph, err := PageHandler(g.st, g.srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(ph)
	t.Cleanup(page.Close)

	b.Do(t, chromedp.Navigate(page.URL+"/fleet?range=7d"), chromedp.WaitVisible(chromedp.CSS("table.agents")))
	checkFleetServers(t, b, servers, ups)
	checkFleetProbes(t, b, ups)
	when := func(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }
	checkFleetEnrolled(t, b, map[string]string{"home-0004": "never uploaded", "home-0005": "silent since " + when(old) + "; revoked " + when(revoked)},
		map[string]string{"home-0002": "revoked " + when(revoked)})
	b.Screenshot(t, "chromium-collector-fleet.png")

	// A probe's last result links to its page, whose plot loads.
	first := ups[0]
	b.Do(t, chromedp.Click(chromedp.CSS(`tr[data-agent="`+first.probe+`"] ol.last li[data-id="`+first.res.ID+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(".plot img")))
	b.Poll(t, `document.querySelector(".plot img").complete`)
	if u := chromiumtest.Eval[string](t, b, `location.pathname`); u != "/result/"+first.res.ID {
		t.Errorf("the link goes to %s", u)
	}
	if w := chromiumtest.Eval[int](t, b, `document.querySelector(".plot img").naturalWidth`); w == 0 {
		t.Error("the plot did not load")
	}
	want := strconv.FormatFloat(*first.res.MaxMbps, 'f', 2, 64) + " Mbit/s"
	if s := chromiumtest.Eval[string](t, b, `document.querySelector(".figures").textContent`); !strings.Contains(s, want) || !strings.Contains(s, first.probe) {
		t.Errorf("the result's figures say %q, want %s and %s", s, want, first.probe)
	}
	b.Screenshot(t, "chromium-collector-result.png")

	// The probe's name links to the overview of its results.
	b.Do(t, chromedp.Navigate(page.URL+"/fleet?range=7d"), chromedp.WaitVisible(chromedp.CSS("table.agents")),
		chromedp.Click(chromedp.CSS(`tr[data-agent="home-0002"] td:first-child a`)), chromedp.WaitVisible(chromedp.CSS("#chart-capacity")))
	rows := chromiumtest.Eval[[]string](t, b, `[...document.querySelectorAll(".recent tbody tr")].map(r => r.cells[2].textContent)`)
	if len(rows) != len(servers) || slices.ContainsFunc(rows, func(a string) bool { return a != "home-0002" }) {
		t.Errorf("home-0002's overview lists the probes %q, want home-0002's %d results", rows, len(servers))
	}
	b.Screenshot(t, "chromium-collector-probe.png")

	checkLoads(t, b, page.URL)
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the browser's console:\n%s", strings.Join(p, "\n"))
	}
	resp, err := http.Get(page.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if line := fmt.Sprintf(`udpstp_collector_uploads_total{outcome="stored"} %d`, len(ups)+1); !strings.Contains(string(m), line) {
		t.Errorf("/metrics has no %q:\n%s", line, m)
	}
}

func fleetDoc(t *testing.T, scenario string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "obudpst", scenario, "client.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkFleetServers: each server's row, its tests, status mix and
// capacity histogram as the uploads' figures make them.
func checkFleetServers(t *testing.T, b *chromiumtest.Browser, servers []string, ups []fleetUpload) {
	t.Helper()
	type row struct {
		Tests string
		Mix   string
		Hist  []int
	}
	got := chromiumtest.Eval[map[string]row](t, b, `Object.fromEntries([...document.querySelectorAll("tr[data-server]")].map(r => [r.dataset.server, {
		Tests: r.cells[1].textContent,
		Mix: r.querySelector(".mixtext").textContent.trim(),
		Hist: [...r.querySelectorAll("svg.hist rect title")].map(x => +x.textContent.split(": ")[1])}]))`)
	if len(got) != len(servers) {
		t.Errorf("the page lists the servers %v, want %v", slices.Sorted(maps.Keys(got)), servers)
	}
	for _, sv := range servers {
		n, mix, hist := 0, map[store.Status]int{}, make([]int, len(store.CapacityEdges))
		for _, u := range ups {
			if u.res.Server != sv {
				continue
			}
			n++
			mix[u.res.Status]++
			if m := u.res.MaxMbps; m != nil {
				hist[bucketOf(*m)]++
			}
		}
		var wantMix []string
		for _, st := range []store.Status{store.StatusOK, store.StatusWarning, store.StatusError, store.StatusMissed} {
			if mix[st] > 0 {
				wantMix = append(wantMix, fmt.Sprintf("%s %d", st, mix[st]))
			}
		}
		r := got[sv]
		if r.Tests != strconv.Itoa(n) || r.Mix != strings.Join(wantMix, " ") || !slices.Equal(r.Hist, hist) {
			t.Errorf("server %s: tests %q, mix %q, histogram %v; want %d, %q, %v", sv, r.Tests, r.Mix, r.Hist, n, strings.Join(wantMix, " "), hist)
		}
	}
}

// bucketOf is the capacity bucket of a maximum: the highest edge at or
// below it (the store's).
func bucketOf(m float64) int {
	i := 0
	for k, e := range store.CapacityEdges {
		if m >= e {
			i = k
		}
	}
	return i
}

// checkFleetProbes: each probe's row, its tests, missed schedules, last
// maximum and last results (newest first, each a link to its page).
func checkFleetProbes(t *testing.T, b *chromiumtest.Browser, ups []fleetUpload) {
	t.Helper()
	type row struct {
		Tests, Missed, Max string
		Last, Links        []string
		Slots              []string
	}
	got := chromiumtest.Eval[map[string]row](t, b, `Object.fromEntries([...document.querySelectorAll("tr[data-agent]")].map(r => [r.dataset.agent, {
		Tests: r.cells[1].textContent, Missed: r.cells[2].textContent, Max: r.cells[5].textContent,
		Last: [...r.querySelectorAll("ol.last li")].map(li => li.dataset.id),
		Links: [...r.querySelectorAll("ol.last li a")].map(a => a.getAttribute("href")),
		Slots: [...r.querySelectorAll("ul.slots li")].map(li => li.textContent)}]))`)
	byProbe := map[string][]*store.Result{}
	for _, u := range ups {
		byProbe[u.probe] = append(byProbe[u.probe], u.res)
	}
	if len(got) != len(byProbe) {
		t.Errorf("the page lists the probes %v, want %d", slices.Sorted(maps.Keys(got)), len(byProbe))
	}
	for p, rs := range byProbe {
		slices.SortFunc(rs, func(a, b *store.Result) int { return b.Start.Compare(a.Start) })
		var ids, links, slots []string
		missed := 0
		for _, r := range rs {
			ids = append(ids, r.ID)
			links = append(links, "/result/"+r.ID)
			if r.Status == store.StatusMissed {
				missed++
				slots = append(slots, r.Warning)
			}
		}
		max := "–"
		if m := rs[0].MaxMbps; m != nil {
			max = strconv.FormatFloat(*m, 'f', 1, 64)
		}
		r := got[p]
		if r.Tests != strconv.Itoa(len(rs)) || r.Missed != strconv.Itoa(missed) || r.Max != max ||
			!slices.Equal(r.Last, ids) || !slices.Equal(r.Links, links) || len(r.Slots) != len(slots) {
			t.Errorf("probe %s: tests %s, missed %s, last max %s, last results %v %v, missed schedules %q; want %d, %d, %s, %v %v, %q",
				p, r.Tests, r.Missed, r.Max, r.Last, r.Links, r.Slots, len(rs), missed, max, ids, links, slots)
		}
		for i := range min(len(r.Slots), len(slots)) {
			if !strings.Contains(r.Slots[i], slots[i]) {
				t.Errorf("probe %s's missed schedule says %q, want %q", p, r.Slots[i], slots[i])
			}
		}
	}
}

// checkFleetEnrolled: the enrolled probes without results in the range
// are listed, each with what its state says (silent, never uploaded,
// revoked), and the probes' table marks the revoked ones it lists.
func checkFleetEnrolled(t *testing.T, b *chromiumtest.Browser, silent, revoked map[string]string) {
	t.Helper()
	got := chromiumtest.Eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("table.enrolled tr[data-probe]")].map(r => [r.dataset.probe, r.querySelector(".state").textContent]))`)
	if !maps.Equal(got, silent) {
		t.Errorf("the enrolled probes without results: %q, want %q", got, silent)
	}
	marked := chromiumtest.Eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll("tr[data-agent]")].filter(r => r.querySelector(".revoked")).map(r => [r.dataset.agent, r.querySelector(".revoked").textContent]))`)
	if !maps.Equal(marked, revoked) {
		t.Errorf("the probes' table marks revoked %q, want %q", marked, revoked)
	}
}

// checkLoads: every request of the pages was answered, without an error
// status, by the collector's page, and the page's own assets were among
// them.
func checkLoads(t *testing.T, b *chromiumtest.Browser, base string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range b.Loads() {
		u := strings.TrimPrefix(l.URL, base)
		if !strings.HasPrefix(l.URL, base+"/") || l.Failed != "" || l.Status >= 400 {
			t.Errorf("a load of the page: %s: status %d %s", l.URL, l.Status, l.Failed)
		}
		path, _, _ := strings.Cut(u, "?")
		seen[path] = true
	}
	for _, p := range []string{"/fleet", "/assets/app.js", "/assets/style.css", "/assets/icon.svg", "/result/00000000-0000-4000-8000-000000000000", "/result/00000000-0000-4000-8000-000000000000/plot.svg"} {
		if !seen[p] {
			t.Errorf("the pages never loaded %s (loaded %v)", p, slices.Sorted(maps.Keys(seen)))
		}
	}
}
