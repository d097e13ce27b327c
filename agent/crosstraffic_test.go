package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// TestCrossTrafficConfig: [crosstraffic]'s defaults, its keys, and a bad
// value refused with the file, line and key.
func TestCrossTrafficConfig(t *testing.T) {
	c, err := Parse("agent.toml", []byte(""), testLoad)
	if err != nil {
		t.Fatal(err)
	}
	if c.CrossTraffic != (CrossConfig{ThresholdMbps: DefaultCrossThresholdMbps, DeferDelay: time.Minute, MaxDeferrals: 3}) || Default().CrossTraffic != c.CrossTraffic {
		t.Errorf("defaults: %+v", c.CrossTraffic)
	}
	c, err = Parse("agent.toml", []byte("[crosstraffic]\nthreshold_mbps = 2.5\nwindow = \"1s\"\nenabled = false\n"+
		"defer_when_busy = true\ndefer_delay = \"5s\"\nmax_deferrals = 2\n"), testLoad)
	if err != nil {
		t.Fatal(err)
	}
	if c.CrossTraffic != (CrossConfig{Disabled: true, ThresholdMbps: 2.5, Window: time.Second, DeferWhenBusy: true, DeferDelay: 5 * time.Second, MaxDeferrals: 2}) {
		t.Errorf("set: %+v", c.CrossTraffic)
	}
	for _, tc := range []struct{ doc, want string }{
		{"[crosstraffic]\nthreshold_mbps = 0\n", "agent.toml:2: crosstraffic.threshold_mbps"},
		{"[crosstraffic]\nthreshold_mbps = -3\n", "agent.toml:2: crosstraffic.threshold_mbps"},
		{"[crosstraffic]\nwindow = \"1ms\"\n", "agent.toml:2: crosstraffic.window"},
		{"[crosstraffic]\nwindow = \"1h\"\n", "agent.toml:2: crosstraffic.window"},
		{"[crosstraffic]\nmax_deferrals = 11\n", "agent.toml:2: crosstraffic.max_deferrals"},
		{"[crosstraffic]\ndefer_delay = \"2h\"\n", "agent.toml:2: crosstraffic.defer_delay"},
		{"[crosstraffic]\nthreshold = 3\n", "agent.toml:2: crosstraffic.threshold: unknown"},
	} {
		if _, err := Parse("agent.toml", []byte(tc.doc), testLoad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestOwnMbit: the test's own traffic is its mean IP-layer rate over its
// duration, each direction's for a bidirectional test, none for a test
// without figures.
func TestOwnMbit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := 20.0
	r := &store.Result{Start: t0, End: t0.Add(5 * time.Second), SummaryMbps: &v}
	if got := ownMbit(r); got != 100 {
		t.Errorf("20 Mbit/s for 5 s: %v Mbit", got)
	}
	if got := ownMbit(&store.Result{Start: t0, End: t0.Add(time.Second)}); got != 0 {
		t.Errorf("no figures: %v Mbit", got)
	}
}

// TestCrossPriorTaken: the slot's look at its line before a test
// (deferWhileBusy) is the test's window before (crossBefore), not looked
// at again: taken once, and only while fresh and of the same interface.
// A cancelled context ends any window at once, so a before figure other
// than -1 came from the slot's look.
func TestCrossPriorTaken(t *testing.T) {
	cfg := mustParse(t, "[crosstraffic]\nthreshold_mbps = 1000000\nwindow = \"10s\"\ndefer_when_busy = true\n"+
		"[[test]]\nname = \"a\"\nservers = [\"127.0.0.1\"]\ndirection = \"down\"\n")
	a, _ := newTestAgent(t, cfg, &fakeClient{}, nil)
	srv := cfg.Tests[0].Servers[0]
	iface, err := routeInterface(srv.Host)
	if err != nil {
		t.Skipf("no route to %s: %v", srv.Host, err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		prior *crossReading
		want  float64
	}{
		{"none", nil, -1},
		{"fresh", &crossReading{iface: iface, mbps: 3.5, at: time.Now()}, 3.5},
		{"stale", &crossReading{iface: iface, mbps: 3.5, at: time.Now().Add(-time.Minute)}, -1},
		{"another interface", &crossReading{iface: iface + "x", mbps: 3.5, at: time.Now()}, -1},
	} {
		a.crossPrior.Store(tc.prior)
		m := a.crossBefore(cancelled, srv)
		if m == nil {
			t.Skipf("%s: no counters for %s", tc.name, iface)
		}
		if m.before != tc.want || a.crossPrior.Load() != nil {
			t.Errorf("%s: before %v, want %v; left %+v", tc.name, m.before, tc.want, a.crossPrior.Load())
		}
	}
	// The slot's look leaves its reading (a line below a threshold no
	// line reaches), which the test then takes.
	cfg.CrossTraffic.Window = 50 * time.Millisecond
	a.cfg.Store(cfg)
	if why := a.deferWhileBusy(context.Background(), cfg, cfg.Tests[0]); why != "" {
		t.Fatalf("deferred: %s", why)
	}
	if p := a.crossPrior.Load(); p == nil || p.iface != iface {
		t.Fatalf("the slot's look left %+v", p)
	}
	cfg.CrossTraffic.Window = time.Hour
	if m := a.crossBefore(cancelled, srv); m == nil || m.before < 0 {
		t.Errorf("the test looked again rather than take the slot's look: %+v", m)
	}
}
