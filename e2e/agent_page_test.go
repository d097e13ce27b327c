//go:build !small

package e2e

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/udpstp/udpstp/internal/testkit/chromiumtest"
)

// overview loads the agent's overview at url and returns its tests table
// (each row's test, last result's link, direction) and its chart lines'
// point counts by series.
func overview(t *testing.T, b *chromiumtest.Browser, url string) ([][]string, map[string]int) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#chart-capacity"))); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	tests, err := chromedp.Run(b.Ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("table.tests tbody tr")].map(r => {
		const last = r.querySelector('td[data-label="Last run"] a'), dir = r.querySelector('td[data-label="Direction"]');
		return [r.cells[0].textContent.trim(), last ? last.getAttribute("href") : "", dir ? dir.textContent.trim() : ""];
	})`))
	if err != nil {
		t.Fatalf("the tests table: %v", err)
	}
	lines, err := chromedp.Run(b.Ctx, chromedp.Evaluate[map[string]int](`Object.fromEntries([...document.querySelectorAll("polyline.line")].map(
		l => [l.dataset.series, l.points.numberOfItems]))`))
	if err != nil {
		t.Fatalf("the charts: %v", err)
	}
	return tests, lines
}

// nextOnPageRe is a test's next run in the overview's tests table.
var nextOnPageRe = regexp.MustCompile(`<tr data-test="daily">.*?<td class="next" data-label="Next run"><time datetime="([^"]+)">`)

// TestAgentPageNextRun: the agent's page shows a scheduled test's next
// run, the slot its schedule loop drew (the one /metrics exports), from
// the agent itself (cmd/udpstp wires the agent into the page). The test
// runs a day off at the soonest: it does not run here.
func TestAgentPageNextRun(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, "[[test]]\nname = \"daily\"\nservers = [\"127.0.0.1:9\"]\ndirection = \"down\"\nevery = \"24h\"\n")
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")
	var onPage string
	waitUntil(t, 60*time.Second, "the next run on the page", func() (bool, string) {
		_, page, err := httpGet(a.base + "/")
		m := nextOnPageRe.FindSubmatch(bytes.ReplaceAll(page, []byte("\n"), nil))
		if m != nil {
			onPage = string(m[1])
		}
		return m != nil, fmt.Sprintf("GET /: %v\n%s", err, page)
	})
	at, err := time.Parse(time.RFC3339, onPage)
	if err != nil {
		t.Fatalf("the next run's datetime %q: %v", onPage, err)
	}
	_, body, err := httpGet(a.base + "/metrics")
	m := regexp.MustCompile(`(?m)^udpstp_agent_next_run_timestamp_seconds\{test="daily"\} (\S+)$`).FindSubmatch(body)
	if err != nil || m == nil {
		t.Fatalf("/metrics has no next run of daily: %v\n%s", err, body)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || int64(math.Floor(v)) != at.Unix() {
		t.Errorf("the page's next run %s, /metrics' %s (%v)", onPage, m[1], err)
	}
	if d := time.Until(at); d < 2*time.Hour {
		t.Errorf("the next run of a test every 24 h is %s off (the least is 0.1 of the mean)", d)
	}
}
