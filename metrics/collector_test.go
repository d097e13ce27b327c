package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/metrics/family"
)

// fakeServer is a server's sources with values set by hand.
type fakeServer struct {
	snap      control.ServerSnapshot
	down, up  engine.SocketCounts
	pool      engine.PoolStats
	snapshots int // calls of the snapshot function
}

func newFakeServer() *fakeServer {
	f := &fakeServer{}
	n := &f.snap
	n.RunningDown, n.RunningUp, n.Running = 2, 1, 3
	n.Reserved, n.DownMbps, n.UpMbps = 4, 300, 50
	n.MaxConnections, n.MaxMbps = 254, 1000
	n.Counts[control.CountSetupAccepted] = 7
	n.Counts[control.CountSetupRateLimited] = 5
	n.Rejected[control.SetupCapExceeded] = 2
	n.Ended[0][dataphase.EndStopped] = 6
	n.Ended[1][dataphase.EndWatchdog] = 1
	n.DataDir[0][dataphase.CountTxIPBytes] = 123456789 // downstream
	n.DataDir[1][dataphase.CountStatusReceived] = 400  // upstream
	n.DataDir[0][dataphase.CountSkippedBursts] = 3
	f.down[engine.CountSentDatagrams] = 1000
	f.up[engine.CountRecvDatagrams] = 900
	f.up[engine.CountSocketErrors] = 2
	f.pool = engine.PoolStats{MaxThreads: 2, Threads: 1, Conns: 3, Turns: 500, Wakeups: 450, Busy: 1500 * time.Millisecond, RingPlans: 70}
	return f
}

func (f *fakeServer) registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg, err := NewRegistry(
		Server(func() control.ServerSnapshot { f.snapshots++; return f.snap }),
		Sockets(func() (engine.SocketCounts, engine.SocketCounts) { return f.down, f.up }),
		Pool(func() engine.PoolStats { return f.pool }),
		udpNetnsSource(func() (v4, v6 udpBufferErrors) {
			return udpBufferErrors{Rcvbuf: 11, Sndbuf: 1, OK: true, Reasm: 24742, ReasmOK: true}, udpBufferErrors{}
		}),
		Build(BuildInfo{Version: "v1.2.3", Revision: "abc123"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// series flattens gathered families into name{label="value",...} -> value,
// labels sorted by name.
func series(mfs []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			v := m.GetGauge().GetValue()
			if mf.GetType() == dto.MetricType_COUNTER {
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// TestCollectorFakeSnapshot: every counter of every table is exported
// under its table's name with udpstp_ and _total, the labelled ones with
// their labels, the values as the snapshot holds them (Mbps as bytes per
// second), the snapshot is read once per scrape, and the client library's
// own linter (what promtool check metrics runs) finds nothing.
func TestCollectorFakeSnapshot(t *testing.T) {
	f := newFakeServer()
	reg := f.registry(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if f.snapshots != 1 {
		t.Errorf("snapshot read %d times in one scrape", f.snapshots)
	}
	got := series(mfs)
	for key, want := range map[string]float64{
		`udpstp_setup_accepted_total{}`:                                      7,
		`udpstp_setup_rate_limited_total{}`:                                  5,
		`udpstp_setup_rejected_total{code="10"}`:                             2,
		`udpstp_setup_rejected_total{code="3"}`:                              0,
		`udpstp_tests_ended_total{direction="downstream",reason="stopped"}`:  6,
		`udpstp_tests_ended_total{direction="upstream",reason="watchdog"}`:   1,
		`udpstp_tests_ended_total{direction="upstream",reason="stopped"}`:    0,
		`udpstp_running_connections{direction="downstream"}`:                 2,
		`udpstp_running_connections{direction="upstream"}`:                   1,
		`udpstp_reserved_connections{}`:                                      4,
		`udpstp_max_connections{}`:                                           254,
		`udpstp_reserved_bandwidth_bytes_per_second{direction="downstream"}`: 300 * 125000,
		`udpstp_reserved_bandwidth_bytes_per_second{direction="upstream"}`:   50 * 125000,
		`udpstp_bandwidth_limit_bytes_per_second{direction="upstream"}`:      1000 * 125000,
		`udpstp_tx_ip_bytes_total{direction="downstream"}`:                   123456789,
		`udpstp_tx_ip_bytes_total{direction="upstream"}`:                     0,
		`udpstp_status_received_total{direction="upstream"}`:                 400,
		`udpstp_skipped_bursts_total{direction="downstream"}`:                3,
		`udpstp_socket_sent_datagrams_total{direction="downstream"}`:         1000,
		`udpstp_socket_recv_datagrams_total{direction="upstream"}`:           900,
		`udpstp_socket_errors_total{direction="upstream"}`:                   2,
		`udpstp_socket_errors_total{direction="downstream"}`:                 0,
		`udpstp_engine_threads{}`:                                            1,
		`udpstp_engine_threads_max{}`:                                        2,
		`udpstp_engine_connections{}`:                                        3,
		`udpstp_engine_wakeups_total{}`:                                      450,
		`udpstp_engine_turns_total{}`:                                        500,
		`udpstp_engine_ring_plans_total{}`:                                   70,
		`udpstp_netns_udp_receive_buffer_errors_total{family="ipv4"}`:        11,
		`udpstp_netns_udp_send_buffer_errors_total{family="ipv4"}`:           1,
		`udpstp_netns_ip_reassembly_failures_total{family="ipv4"}`:           24742,
		`udpstp_build_info{goarch="` + goarch() + `",goos="` + goos() + `",goversion="` + goversion() + `",revision="abc123",version="v1.2.3"}`: 1,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if engine.PoolSupported {
		if v := got[`udpstp_engine_busy_seconds_total{}`]; v != 1.5 {
			t.Errorf("busy seconds %v, want 1.5", v)
		}
	}
	if _, ok := got[`udpstp_netns_ip_reassembly_failures_total{family="ipv6"}`]; ok {
		t.Error("a family whose reassembly counters were not found is exported")
	}
	if _, ok := got[`udpstp_netns_udp_receive_buffer_errors_total{family="ipv6"}`]; ok {
		t.Error("a family whose counters were not found is exported")
	}
	// Every line of every table, by enumeration: a counter added to a
	// table is exported without a change here.
	for c := range control.NumServerCounters {
		if _, ok := got["udpstp_"+c.Info().Name+"_total{}"]; !ok {
			t.Errorf("control counter %s not exported", c.Info().Name)
		}
	}
	for c := range dataphase.NumCounters {
		if _, ok := got["udpstp_"+c.Info().Name+`_total{direction="upstream"}`]; !ok {
			t.Errorf("data counter %s not exported", c.Info().Name)
		}
	}
	for c := range engine.NumSocketCounters {
		name := "udpstp_socket_" + strings.TrimPrefix(c.Info().Name, "socket_") + "_total"
		for _, d := range []string{Downstream, Upstream} {
			if _, ok := got[name+`{direction="`+d+`"}`]; !ok {
				t.Errorf("socket counter %s %s not exported", c.Info().Name, d)
			}
		}
	}
	for r := dataphase.EndStopped; r < dataphase.NumEndReasons; r++ {
		for _, d := range []string{Downstream, Upstream} {
			if _, ok := got[`udpstp_tests_ended_total{direction="`+d+`",reason="`+r.Name()+`"}`]; !ok {
				t.Errorf("end reason %s %s not exported", r.Name(), d)
			}
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "udpstp_") && mf.GetHelp() == "" {
			t.Errorf("%s has no help", mf.GetName())
		}
	}

	// Without -B there is no limit to show.
	f.snap.MaxMbps = 0
	mfs, err = reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := series(mfs)[`udpstp_bandwidth_limit_bytes_per_second{direction="downstream"}`]; ok {
		t.Error("a bandwidth limit is exported without -B")
	}
	if f.snapshots != 2 {
		t.Errorf("snapshot read %d times in two scrapes", f.snapshots)
	}
}

// TestCollectorDuplicate: two tables that gave the same name to different
// counters would export one series twice; the scrape reports it, naming
// the metric, instead of serving an ambiguous family.
func TestCollectorDuplicate(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(func(emit func(family.Sample)) {
		emit(family.Sample{Family: tableFamily("x", "one table", family.Counter), Value: 1})
	}, func(emit func(family.Sample)) {
		emit(family.Sample{Family: tableFamily("x", "one table", family.Counter), Value: 2})
	}))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "udpstp_x_total") {
		t.Fatalf("gather: %v, want an error naming udpstp_x_total", err)
	}
}

// TestHandlerNegotiates: /metrics answers in OpenMetrics when asked (as
// Prometheus asks) and in the text format otherwise; / names /metrics,
// anything else is 404.
func TestHandlerNegotiates(t *testing.T) {
	f := newFakeServer()
	h := Handler(f.registry(t), discardLog())
	for _, c := range []struct {
		path, accept, wantType, wantEnd string
		code                            int
	}{
		{"/metrics", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5", "application/openmetrics-text", "# EOF\n", 200},
		{"/metrics", "", "text/plain; version=0.0.4", "\n", 200},
		{"/metrics", "text/plain", "text/plain; version=0.0.4", "\n", 200},
		{"/", "", "text/plain", "/metrics\n", 200},
		{"/other", "", "", "", 404},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body := w.Body.String()
		if w.Code != c.code {
			t.Errorf("%s (Accept %q): %d, want %d", c.path, c.accept, w.Code, c.code)
			continue
		}
		if c.code != 200 {
			continue
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, c.wantType) {
			t.Errorf("%s (Accept %q): Content-Type %q, want %q", c.path, c.accept, ct, c.wantType)
		}
		if !strings.HasSuffix(body, c.wantEnd) {
			t.Errorf("%s (Accept %q): body ends %q, want %q", c.path, c.accept, body[max(0, len(body)-40):], c.wantEnd)
		}
		if c.path == "/metrics" && !strings.Contains(body, "udpstp_setup_accepted_total 7") &&
			!strings.Contains(body, "udpstp_setup_accepted_total 7.0") {
			t.Errorf("%s (Accept %q): no udpstp_setup_accepted_total 7 in\n%s", c.path, c.accept, body)
		}
	}
}

// TestCollectorConcurrentScrapes: scrapes may overlap (the handler serves
// up to maxScrapes at once); under the race detector this finds unguarded
// state in the Collector.
func TestCollectorConcurrentScrapes(t *testing.T) {
	reg, err := NewRegistry(Server(func() control.ServerSnapshot { return newFakeServer().snap }),
		Pool(func() engine.PoolStats { return engine.PoolStats{Threads: 1} }))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, maxScrapes)
	for range maxScrapes {
		go func() {
			var err error
			for range 20 {
				if _, err = reg.Gather(); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range maxScrapes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
