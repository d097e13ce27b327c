package agent

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	udpmetrics "github.com/udpstp/udpstp/metrics"
	"github.com/udpstp/udpstp/metrics/family"
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
	{"cross_traffic_bytes_per_second", "other traffic on the probe's interface during the test (docs/agent.md, Cross-traffic)", "",
		func(r *store.Result) *float64 { return r.CrossMbps }, mbpsToBytes},
	{"cross_traffic_busy", "1 if the other traffic during the test was above [crosstraffic] threshold_mbps", "", crossBusy, 1},
}

var resultLabels = []string{"test", "server", "direction"}

// The agent's families (/metrics: udpstp_agent_*; /probe:
// udpstp_probe_*), each declared once; the figures' are made from
// figures, one per name (capacity's two results share one).
var (
	agentFigureFamilies = figureFamilies("udpstp_agent_", "Last result: %s.", resultLabels)
	probeFigureFamilies = figureFamilies("udpstp_probe_", "The test's %s.", nil)

	famLastStart = &family.Family{Name: "udpstp_agent_last_test_timestamp_seconds",
		Help: "Start of the last result (Unix time).", Type: family.Gauge, Labels: resultLabels}
	famLastStatus = &family.Family{Name: "udpstp_agent_last_error_status",
		Help: "OB-UDPST's ErrorStatus of the last result (0: success, 1-49: warning; a missed slot: 255).", Type: family.Gauge, Labels: resultLabels}
	famTests = &family.Family{Name: "udpstp_agent_tests_total",
		Help: "Results stored, by test and status (ok, warning, error, missed).", Type: family.Counter, Labels: []string{"test", "status"}}
	famDuration = &family.Family{Name: "udpstp_agent_test_duration_seconds",
		Help: "Duration of the tests that ran.", Type: family.Histogram, Labels: []string{"test"}}
	famRunning  = &family.Family{Name: "udpstp_agent_test_running", Help: "1 while a test runs.", Type: family.Gauge}
	famReloaded = &family.Family{Name: "udpstp_agent_config_last_reload_successful",
		Help: "1 if the last configuration load succeeded.", Type: family.Gauge}
	famWaiting = &family.Family{Name: "udpstp_agent_results_waiting",
		Help: "Results kept in the local spool, waiting for the remote store.", Type: family.Gauge}
	famStoreUp = &family.Family{Name: "udpstp_agent_store_up",
		Help: "1 if the last call to the remote store succeeded.", Type: family.Gauge}
	famUploadFailures = &family.Family{Name: "udpstp_agent_store_upload_failures_total",
		Help: "Uploads to the remote store that failed (each is retried).", Type: family.Counter}
	famRefused = &family.Family{Name: "udpstp_agent_results_refused_total",
		Help: "Results the spool could not keep (its local store failed or it was full): lost.", Type: family.Counter}
	famDropFailures = &family.Family{Name: "udpstp_agent_spool_drop_failures_total",
		Help: "Uploaded results the spool failed to delete locally (uploaded again later, stored once).", Type: family.Counter}

	famNextRun = &family.Family{Name: "udpstp_agent_next_run_timestamp_seconds",
		Help: "When each scheduled test runs next (Unix time).", Type: family.Gauge, Labels: []string{"test"}}

	famProbeSuccess  = &family.Family{Name: "udpstp_probe_success", Help: "1 if the test completed (ErrorStatus below 50).", Type: family.Gauge}
	famProbeStatus   = &family.Family{Name: "udpstp_probe_error_status", Help: "OB-UDPST's ErrorStatus of the test.", Type: family.Gauge}
	famProbeDuration = &family.Family{Name: "udpstp_probe_duration_seconds", Help: "Duration of the test.", Type: family.Gauge}
)

// durationBuckets are udpstp_agent_test_duration_seconds's upper bounds.
var durationBuckets = []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 120}

// figureFamilies declares each figure's family: prefix and its name, the
// help in helpFmt, labels and "result" for a figure that has several.
func figureFamilies(prefix, helpFmt string, labels []string) map[string]*family.Family {
	fams := map[string]*family.Family{}
	for _, f := range figures {
		if fams[f.name] != nil {
			continue
		}
		l := slices.Clone(labels)
		if f.result != "" {
			l = append(l, "result")
		}
		fams[f.name] = &family.Family{Name: prefix + f.name, Help: fmt.Sprintf(helpFmt, f.help), Type: family.Gauge, Labels: l}
	}
	return fams
}

// Families are every family the agent can expose on /metrics (beside
// the client library's go_* and process_*) and /probe.
func Families() []*family.Family {
	fams := []*family.Family{famLastStart, famLastStatus, famTests, famDuration, famRunning, famReloaded, famWaiting,
		famStoreUp, famUploadFailures, famRefused, famDropFailures, famNextRun, famProbeSuccess, famProbeStatus, famProbeDuration}
	for _, f := range figures {
		fams = append(fams, agentFigureFamilies[f.name], probeFigureFamilies[f.name])
	}
	return fams
}

// metrics are the agent's own registry (/metrics): what the agent keeps
// of its results, made into samples at each scrape (metrics.Collector).
type metrics struct {
	reg     *prometheus.Registry
	running level // 1 while a test runs
	reloads level // 1 if the last configuration load succeeded

	mu        sync.Mutex
	last      map[resultKey]*lastResult
	tests     map[[2]string]uint64 // by test and status
	durations map[string]*family.HistogramValue
	spool     spooler              // nil without one
	next      map[string]time.Time // each scheduled test's next slot
}

// resultKey is a result's test, server and direction: its series.
type resultKey struct{ test, server, direction string }

// lastResult is the last result of a test, server and direction, and
// the figures of the last of them that ran (a missed slot keeps them).
type lastResult struct {
	start       time.Time
	errorStatus int
	figures     []*float64 // in the order of figures, in the store's units; nil: not measured
}

// level is a gauge's value, set and read without a lock.
type level struct{ bits atomic.Uint64 }

// Set sets the value.
func (l *level) Set(v float64) { l.bits.Store(math.Float64bits(v)) }

func (l *level) get() float64 { return math.Float64frombits(l.bits.Load()) }

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), last: map[resultKey]*lastResult{}, tests: map[[2]string]uint64{},
		durations: map[string]*family.HistogramValue{}}
	m.reloads.Set(1)
	m.reg.MustRegister(udpmetrics.NewCollector(m.collect),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// collect reports the agent's samples (a metrics.Source).
func (m *metrics) collect(emit func(family.Sample)) {
	emit(family.Sample{Family: famRunning, Value: m.running.get()})
	emit(family.Sample{Family: famReloaded, Value: m.reloads.get()})
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.last {
		lv := []string{k.test, k.server, k.direction}
		emit(family.Sample{Family: famLastStart, Values: lv, Value: float64(r.start.UnixMilli()) / 1e3})
		emit(family.Sample{Family: famLastStatus, Values: lv, Value: float64(r.errorStatus)})
		for i, f := range figures {
			if v := r.figures[i]; v != nil {
				flv := lv
				if f.result != "" {
					flv = append(lv[:len(lv):len(lv)], f.result)
				}
				emit(family.Sample{Family: agentFigureFamilies[f.name], Values: flv, Value: *v * f.scale})
			}
		}
	}
	for k, n := range m.tests {
		emit(family.Sample{Family: famTests, Values: k[:], Value: float64(n)})
	}
	for test, h := range m.durations {
		c := *h
		c.Buckets = maps.Clone(h.Buckets)
		emit(family.Sample{Family: famDuration, Values: []string{test}, Hist: &c})
	}
	for test, at := range m.next {
		emit(family.Sample{Family: famNextRun, Values: []string{test}, Value: float64(at.UnixMilli()) / 1e3})
	}
	if sp := m.spool; sp != nil {
		st := sp.State()
		emit(family.Sample{Family: famWaiting, Value: float64(st.Pending)})
		emit(family.Sample{Family: famStoreUp, Value: b2f(sp.RemoteUp())})
		emit(family.Sample{Family: famUploadFailures, Value: float64(st.Failures)})
		emit(family.Sample{Family: famRefused, Value: float64(st.Refused)})
		emit(family.Sample{Family: famDropFailures, Value: float64(st.DropFailures)})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// spooler is a store that keeps results while its remote is down
// (store.Spool).
type spooler interface {
	State() store.SpoolState
	RemoteUp() bool
}

// setNext sets the next slots of the scheduled tests (all of them: a
// test no longer configured leaves the gauge).
func (m *metrics) setNext(next map[string]time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = next
}

// watchSpool registers the figures of a spool: how many results wait for
// the remote, whether it answered last, and its failures so far.
func (m *metrics) watchSpool(sp spooler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.spool = sp
}

// restore sets the gauges of r, a result stored before the agent started,
// without counting it again.
func (m *metrics) restore(r *store.Result) { m.set(r) }

// observe records a stored result. A missed slot counts, but leaves the
// figures of the last test that ran.
func (m *metrics) observe(r *store.Result) {
	if !labelsOK(r) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tests[[2]string{r.Test, string(r.Status)}]++
	if r.Status != store.StatusMissed {
		h := m.durations[r.Test]
		if h == nil {
			h = &family.HistogramValue{Buckets: map[float64]uint64{}}
			for _, b := range durationBuckets {
				h.Buckets[b] = 0
			}
			m.durations[r.Test] = h
		}
		d := r.End.Sub(r.Start).Seconds()
		h.Count++
		h.Sum += d
		for _, b := range durationBuckets {
			if d <= b {
				h.Buckets[b]++
			}
		}
	}
	m.setLocked(r)
}

// set keeps r as the last result of its test, server and direction.
func (m *metrics) set(r *store.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(r)
}

func (m *metrics) setLocked(r *store.Result) {
	if !labelsOK(r) {
		return
	}
	k := resultKey{r.Test, r.Server, r.Direction}
	last := m.last[k]
	if last == nil {
		last = &lastResult{figures: make([]*float64, len(figures))}
		m.last[k] = last
	}
	last.start, last.errorStatus = r.Start, r.ErrorStatus
	if r.Status == store.StatusMissed {
		return
	}
	for i, f := range figures {
		last.figures[i] = nil // not measured this time: no stale figure
		if v := f.get(r); v != nil {
			x := *v
			last.figures[i] = &x
		}
	}
}

// maxLabelLen bounds a label value: test names are checked (check.go),
// servers come from the file or [probe] targets (MaxTargetLen), so a
// longer or non-UTF-8 one (a row of an older agent's store) is not a
// label; the client library would panic on invalid UTF-8.
const maxLabelLen = MaxTargetLen + 8

// labelsOK says whether r's test, server and direction may be labels.
func labelsOK(r *store.Result) bool {
	for _, v := range []string{r.Test, r.Server, r.Direction} {
		if len(v) > maxLabelLen || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// probeRegistry is /probe's answer for one result.
func probeRegistry(r *store.Result) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(udpmetrics.NewCollector(func(emit func(family.Sample)) {
		ok := 0.0
		if r.Status == store.StatusOK || r.Status == store.StatusWarning {
			ok = 1
		}
		emit(family.Sample{Family: famProbeSuccess, Value: ok})
		emit(family.Sample{Family: famProbeStatus, Value: float64(r.ErrorStatus)})
		emit(family.Sample{Family: famProbeDuration, Value: r.End.Sub(r.Start).Seconds()})
		for _, f := range figures {
			if v := f.get(r); v != nil {
				var lv []string
				if f.result != "" {
					lv = []string{f.result}
				}
				emit(family.Sample{Family: probeFigureFamilies[f.name], Values: lv, Value: *v * f.scale})
			}
		}
	}))
	return reg
}
