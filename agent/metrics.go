package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/udpstp/udpstp/store"
)

// figure is one headline figure of a result as a gauge: the agent's last
// result per test, server and direction (udpstp_agent_<name>), and a
// /probe's answer (udpstp_probe_<name>).
type figure struct {
	name, help string
	// result labels a figure of which the test has several: capacity's
	// maximum and summary, as the client's textfile has them
	// (udpstp_test_capacity_bytes_per_second{result=...}).
	result string
	get    func(r *store.Result) *float64
	scale  float64 // the store's unit to the metric's base unit
}

// mbpsToBytes: Prometheus's base unit of a rate is bytes per second.
const mbpsToBytes = 1e6 / 8

const capacityHelp = "IP-layer capacity of the test (RFC 9097), bytes per second: its maximum (result=max) and its summary (result=summary)"

var figures = []figure{
	{"capacity_bytes_per_second", capacityHelp, "max", func(r *store.Result) *float64 { return r.MaxMbps }, mbpsToBytes},
	{"capacity_bytes_per_second", capacityHelp, "summary", func(r *store.Result) *float64 { return r.SummaryMbps }, mbpsToBytes},
	{"loss_ratio", "loss ratio at the maximum capacity", "",
		func(r *store.Result) *float64 { return r.LossRatio }, 1},
	{"rtt_min_seconds", "minimum round-trip time", "",
		func(r *store.Result) *float64 { return r.RTTMinMs }, 1e-3},
	{"rtt_range_seconds", "round-trip time range (maximum minus minimum) at the maximum capacity", "",
		func(r *store.Result) *float64 { return r.RTTRangeMs }, 1e-3},
	{"delay_variation_seconds", "one-way delay variation at the maximum capacity", "",
		func(r *store.Result) *float64 { return r.DelayVarMs }, 1e-3},
	{"latency_under_load_seconds", "latency under load of a bidirectional test", "",
		func(r *store.Result) *float64 { return r.LoadedMs }, 1e-3},
	{"responsiveness_rpm", "round trips per minute under load (docs/agent.md)", "",
		func(r *store.Result) *float64 { return r.RPM }, 1},
}

var resultLabels = []string{"test", "server", "direction"}

// metrics are the agent's own registry (/metrics).
type metrics struct {
	reg      *prometheus.Registry
	figures  []*prometheus.GaugeVec // in the order of figures (capacity's two share one)
	last     *prometheus.GaugeVec   // start time of the last result
	status   *prometheus.GaugeVec   // its ErrorStatus
	tests    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	running  prometheus.Gauge
	reloads  prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	byName := map[string]*prometheus.GaugeVec{}
	for _, f := range figures {
		g := byName[f.name]
		if g == nil {
			labels := resultLabels
			if f.result != "" {
				labels = append(labels[:len(labels):len(labels)], "result")
			}
			g = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "udpstp_agent_" + f.name, Help: "Last result: " + f.help + "."}, labels)
			byName[f.name] = g
			m.reg.MustRegister(g)
		}
		m.figures = append(m.figures, g)
	}
	m.last = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "udpstp_agent_last_test_timestamp_seconds",
		Help: "Start of the last result (Unix time)."}, resultLabels)
	m.status = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "udpstp_agent_last_error_status",
		Help: "OB-UDPST's ErrorStatus of the last result (0: success, 1-49: warning; a missed slot: 255)."}, resultLabels)
	m.tests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "udpstp_agent_tests_total",
		Help: "Results stored, by test and status (ok, warning, error, missed)."}, []string{"test", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "udpstp_agent_test_duration_seconds",
		Help: "Duration of the tests that ran.", Buckets: []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 120}}, []string{"test"})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Name: "udpstp_agent_test_running", Help: "1 while a test runs."})
	m.reloads = prometheus.NewGauge(prometheus.GaugeOpts{Name: "udpstp_agent_config_last_reload_successful",
		Help: "1 if the last configuration load succeeded."})
	m.reloads.Set(1)
	m.reg.MustRegister(m.last, m.status, m.tests, m.duration, m.running, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// spooler is a store that keeps results while its remote is down
// (store.Spool).
type spooler interface {
	Pending() int
	RemoteUp() bool
}

// watchSpool registers the gauges of a spool: how many results wait for
// the remote, and whether it answered last.
func (m *metrics) watchSpool(sp spooler) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "udpstp_agent_results_waiting",
			Help: "Results kept in the local spool, waiting for the remote store."},
			func() float64 { return float64(sp.Pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "udpstp_agent_store_up",
			Help: "1 if the last call to the remote store succeeded."},
			func() float64 {
				if sp.RemoteUp() {
					return 1
				}
				return 0
			}))
}

// restore sets the gauges of r, a result stored before the agent started,
// without counting it again.
func (m *metrics) restore(r *store.Result) { m.set(r) }

// observe records a stored result. A missed slot counts, but leaves the
// figures of the last test that ran.
func (m *metrics) observe(r *store.Result) {
	m.tests.WithLabelValues(r.Test, string(r.Status)).Inc()
	if r.Status != store.StatusMissed {
		m.duration.WithLabelValues(r.Test).Observe(r.End.Sub(r.Start).Seconds())
	}
	m.set(r)
}

// set sets the gauges of r, the last result of its test, server and
// direction.
func (m *metrics) set(r *store.Result) {
	lv := []string{r.Test, r.Server, r.Direction}
	m.last.WithLabelValues(lv...).Set(float64(r.Start.UnixMilli()) / 1e3)
	m.status.WithLabelValues(lv...).Set(float64(r.ErrorStatus))
	if r.Status == store.StatusMissed {
		return
	}
	for i, f := range figures {
		flv := lv
		if f.result != "" {
			flv = append(lv[:len(lv):len(lv)], f.result)
		}
		if v := f.get(r); v != nil {
			m.figures[i].WithLabelValues(flv...).Set(*v * f.scale)
		} else {
			// Not measured this time: no stale figure.
			m.figures[i].DeleteLabelValues(flv...)
		}
	}
}

// probeRegistry is /probe's answer for one result.
func probeRegistry(r *store.Result) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	vecs := map[string]*prometheus.GaugeVec{}
	gauge := func(name, help, result string, v float64) {
		g := vecs[name]
		if g == nil {
			var labels []string
			if result != "" {
				labels = []string{"result"}
			}
			g = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "udpstp_probe_" + name, Help: help}, labels)
			vecs[name] = g
			reg.MustRegister(g)
		}
		if result != "" {
			g.WithLabelValues(result).Set(v)
		} else {
			g.WithLabelValues().Set(v)
		}
	}
	ok := 0.0
	if r.Status == store.StatusOK || r.Status == store.StatusWarning {
		ok = 1
	}
	gauge("success", "1 if the test completed (ErrorStatus below 50).", "", ok)
	gauge("error_status", "OB-UDPST's ErrorStatus of the test.", "", float64(r.ErrorStatus))
	gauge("duration_seconds", "Duration of the test.", "", r.End.Sub(r.Start).Seconds())
	for _, f := range figures {
		if v := f.get(r); v != nil {
			gauge(f.name, "The test's "+f.help+".", f.result, *v*f.scale)
		}
	}
	return reg
}
