//go:build !small

package web

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// testRowOf is the overview's row of test name in body, "" if none.
func testRowOf(body, name string) string {
	m := regexp.MustCompile(`(?s)<tr data-test="` + regexp.QuoteMeta(name) + `">(.*?)</tr>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// nextCell is how the overview shows a next run at at, in words.
func nextCell(at time.Time, words string) string {
	return `<td class="next" data-label="Next run"><time datetime="` + at.UTC().Format(time.RFC3339) + `">` +
		at.Local().Format("2006-01-02 15:04") + `</time> <span class="in">(` + words + `)</span></td>`
}

// TestOverviewNextRuns: each of the agent's tests shows its next run (the
// agent's local time and how far off), a test without one says so, a due
// slot says it is due or running, and the live part shows the slot the
// agent draws after a run. A page without an agent has no such column.
func TestOverviewNextRuns(t *testing.T) {
	f := newFixture(t, 30)
	soon, later := f.now.Add(4*time.Minute), f.now.Add(26*time.Hour+5*time.Minute)
	f.agent.setNext(f.sd.tests[0], soon)
	f.agent.setNext(f.sd.tests[1], later)
	_, body := get(t, f.srv.URL+"/")
	if !strings.Contains(body, "<th>Next run</th>") {
		t.Error("the tests' table has no next run column")
	}
	if row := testRowOf(body, f.sd.tests[0]); !strings.Contains(row, nextCell(soon, "in 4 min")) {
		t.Errorf("%s's row, want %s:\n%s", f.sd.tests[0], nextCell(soon, "in 4 min"), row)
	}
	if row := testRowOf(body, f.sd.tests[1]); !strings.Contains(row, nextCell(later, "in 1 d 2 h")) {
		t.Errorf("%s's row, want %s:\n%s", f.sd.tests[1], nextCell(later, "in 1 d 2 h"), row)
	}
	if row := testRowOf(body, f.sd.tests[2]); !strings.Contains(row, `<td class="next" data-label="Next run"><span class="none">none scheduled</span></td>`) {
		t.Errorf("%s has no next run; its row:\n%s", f.sd.tests[2], row)
	}

	// A slot that has come: due, and running while its test runs; the
	// slot drawn after the run replaces it in the live part.
	due := f.now.Add(-time.Minute)
	f.agent.setNext(f.sd.tests[0], due)
	if _, body := get(t, f.srv.URL+"/live"); !strings.Contains(testRowOf(body, f.sd.tests[0]), `<span class="in" data-due>(due now)</span>`) {
		t.Errorf("a slot a minute ago:\n%s", testRowOf(body, f.sd.tests[0]))
	}
	f.agent.release = make(chan struct{})
	f.agent.redraw = func(string) time.Time { return f.now.Add(90 * time.Minute) }
	if err := f.agent.RunNow(f.sd.tests[0]); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, f.srv.URL+"/live")
	if !strings.Contains(testRowOf(body, f.sd.tests[0]), `<span class="in" data-due>(running now)</span>`) || !strings.Contains(body, `data-running="`+f.sd.tests[0]+`"`) {
		t.Errorf("the due test runs:\n%s", testRowOf(body, f.sd.tests[0]))
	}
	close(f.agent.release)
	f.agent.wait()
	if _, body := get(t, f.srv.URL+"/live"); !strings.Contains(testRowOf(body, f.sd.tests[0]), nextCell(f.now.Add(90*time.Minute), "in 1 h 30 min")) {
		t.Errorf("after the run:\n%s", testRowOf(body, f.sd.tests[0]))
	}

	// The fleet's tests (another probe's, or no agent): no next runs.
	if _, body := get(t, f.srv.URL+"/?agent=probe-rack"); strings.Contains(body, "Next run") {
		t.Error("another probe's tests show this agent's next runs")
	}
	srv := httptest.NewServer(Handler(Config{Store: f.st, Now: func() time.Time { return f.now }}))
	defer srv.Close()
	if _, body := get(t, srv.URL+"/"); strings.Contains(body, "Next run") {
		t.Error("a page without an agent shows next runs")
	}
}

// TestInWords: how far off a next run is, to the minute (assets/app.js's
// inWords says the same).
func TestInWords(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Hour, "due now"}, {0, "due now"}, {29 * time.Second, "in under a minute"},
		{31 * time.Second, "in 1 min"}, {4*time.Minute + 10*time.Second, "in 4 min"},
		{59*time.Minute + 29*time.Second, "in 59 min"}, {59*time.Minute + 31*time.Second, "in 1 h"},
		{2*time.Hour + 5*time.Minute, "in 2 h 5 min"}, {24 * time.Hour, "in 1 d"},
		{3*24*time.Hour + time.Hour + 20*time.Minute, "in 3 d 1 h"},
	} {
		if got := inWords(c.d); got != c.want {
			t.Errorf("inWords(%s) = %q, want %q", c.d, got, c.want)
		}
	}
}
