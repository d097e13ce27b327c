//go:build !small

package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// TestCrossTrafficMark: a result whose line carried other traffic above
// the probe's threshold is marked "shared" in the tests and latest
// results tables and on its page; one below it and an unmeasured one are
// not.
func TestCrossTrafficMark(t *testing.T) {
	f := newFixture(t, 0, "busy", "quiet", "old")
	mk := func(test string, ago time.Duration, cross *float64, busy bool) *store.Result {
		r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: test, Agent: "probe", Server: "198.18.0.1:25000",
			Start: f.now.Add(-ago), Direction: "down", Status: store.StatusOK, MaxMbps: f64(90), CrossMbps: cross, CrossBusy: busy}
		if err := f.st.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	busy := mk("busy", time.Minute, f64(250), true)
	quiet := mk("quiet", 2*time.Minute, f64(0.4), false)
	old := mk("old", 3*time.Minute, nil, false)
	_, body := get(t, f.srv.URL+"/")
	if n := strings.Count(body, `class="busy"`); n != 2 {
		t.Errorf("the overview has %d cross-traffic marks, want 2 (the busy result's, in both tables)", n)
	}
	if !strings.Contains(body, "250.0 Mbit/s of other traffic") {
		t.Error("the mark does not say how much other traffic")
	}
	_, body = get(t, f.srv.URL+"/result/"+busy.ID)
	if !strings.Contains(body, "Other traffic on the line") || !strings.Contains(body, `class="busy"`) {
		t.Error("the busy result's page does not mark it")
	}
	_, body = get(t, f.srv.URL+"/result/"+quiet.ID)
	if !strings.Contains(body, "Other traffic on the line") || strings.Contains(body, `class="busy"`) {
		t.Error("the quiet result's page: its figure missing, or marked")
	}
	_, body = get(t, f.srv.URL+"/result/"+old.ID)
	if strings.Contains(body, "Other traffic on the line") {
		t.Error("an unmeasured result shows a cross-traffic figure")
	}
}
