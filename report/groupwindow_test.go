package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The executor's grouping window is in the extension and in -v's text
// when there was one, and nowhere when there was none (the default).
func TestGroupingWindow(t *testing.T) {
	run := func(f Format, verbose bool, window time.Duration) string {
		return threeSubIntervals(t, f, verbose, func(c *Collector) { c.SetGroupingWindow(window) })
	}
	var doc struct {
		Udpstp *struct{ GroupingWindowUs *int64 } `json:"udpstp"`
	}
	if err := json.Unmarshal([]byte(run(FormatJSON, false, 74*time.Microsecond)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Udpstp == nil || doc.Udpstp.GroupingWindowUs == nil || *doc.Udpstp.GroupingWindowUs != 74 {
		t.Errorf("with a 74 µs window the extension is %+v, want GroupingWindowUs 74", doc.Udpstp)
	}
	doc.Udpstp = nil
	if err := json.Unmarshal([]byte(run(FormatJSON, false, 0)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Udpstp != nil && doc.Udpstp.GroupingWindowUs != nil {
		t.Errorf("without a window the extension has GroupingWindowUs %d", *doc.Udpstp.GroupingWindowUs)
	}
	if s := run(FormatText, true, 74*time.Microsecond); !strings.Contains(s, "Grouping window (udpstp): each Burst left up to 74 us late") {
		t.Errorf("-v text does not say the window:\n%s", s)
	}
	if s := run(FormatText, true, 0); strings.Contains(s, "Grouping window") {
		t.Errorf("-v text names a window that was not used:\n%s", s)
	}
	if s := run(FormatText, false, 74*time.Microsecond); strings.Contains(s, "Grouping window") {
		t.Errorf("the text without -v names the window:\n%s", s)
	}
}

// threeSubIntervals is the report of a one-connection test of three
// Sub-Intervals with the extensions on, set called before Finish.
func threeSubIntervals(t *testing.T, f Format, verbose bool, set func(c *Collector)) string {
	t.Helper()
	var out bytes.Buffer
	c := New(&out, Options{Format: f, Verbose: verbose, Extensions: true, Connections: 1, MinConnections: 1,
		Now: fixedClock(1796009000e9)})
	c.Activate(testInfo(3))
	for k := 1; k <= 3; k++ {
		c.Add(0, fakeResult(k, 0, false))
	}
	c.ConnEnded(true)
	set(c)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
