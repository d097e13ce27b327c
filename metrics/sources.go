package metrics

import (
	"runtime"
	"strings"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/metrics/family"
)

// Server reports a server's counters and gauges as snapshot lists them
// (control.ServerSnapshot.Each: the Control Phase table, the refusals by
// Setup code, the ends by direction and reason, the Data Phase table).
// snapshot is called once per scrape.
func Server(snapshot func() control.ServerSnapshot) Source {
	return func(emit func(family.Sample)) {
		n := snapshot()
		n.Each(func(m control.Metric) {
			typ := family.Counter
			if m.Gauge {
				typ = family.Gauge
			}
			s := family.Sample{Family: tableFamily(m.Name, m.Help, typ), Value: float64(m.Value)}
			if m.Direction != "" {
				s.Family.Labels = append(s.Family.Labels, "direction")
				s.Values = append(s.Values, m.Direction)
			}
			if m.Label != "" {
				s.Family.Labels = append(s.Family.Labels, m.Label)
				s.Values = append(s.Values, m.LabelValue)
			}
			emit(s)
		})
	}
}

// tableFamily is the family of a counter table's row (its declaration):
// Namespace, the row's snake_case name and, for a counter, "_total".
func tableFamily(name, help string, typ family.Type) *family.Family {
	f := &family.Family{Name: Namespace + "_" + name, Help: help, Type: typ}
	if typ == family.Counter {
		f.Name += "_total"
	}
	return f
}

// Directions name the two halves of per-direction totals.
const (
	Downstream = "downstream"
	Upstream   = "upstream"
)

// Sockets reports the test sockets' counters (engine's socket counter
// table), summed by the direction of their tests: on a downstream test's
// socket the server sends the load, on an upstream one it receives it.
// totals is called once per scrape.
func Sockets(totals func() (down, up engine.SocketCounts)) Source {
	return func(emit func(family.Sample)) {
		down, up := totals()
		for c := range engine.NumSocketCounters {
			info := c.Info()
			// "socket_errors" stays itself rather than socket_socket_errors.
			f := tableFamily("socket_"+strings.TrimPrefix(info.Name, "socket_"), info.Help+", on test sockets", family.Counter)
			f.Labels = []string{"direction"}
			for _, d := range []struct {
				dir string
				n   *engine.SocketCounts
			}{{Downstream, &down}, {Upstream, &up}} {
				emit(family.Sample{Family: f, Values: []string{d.dir}, Value: float64(d.n[c])})
			}
		}
	}
}

// The families of the static Sources, each declared once.
var (
	famEngineThreads    = &family.Family{Name: "udpstp_engine_threads", Help: "Engine Threads running", Type: family.Gauge}
	famEngineThreadsMax = &family.Family{Name: "udpstp_engine_threads_max",
		Help: "The most Engine Threads the pool may start (the CPUs the process may use)", Type: family.Gauge}
	famEngineConns   = &family.Family{Name: "udpstp_engine_connections", Help: "Test Connections the Engine Threads serve", Type: family.Gauge}
	famEngineTurns   = &family.Family{Name: "udpstp_engine_turns_total", Help: "Turns the Engine Threads ran", Type: family.Counter}
	famEngineWakeups = &family.Family{Name: "udpstp_engine_wakeups_total", Help: "Waits of the Engine Threads that ended", Type: family.Counter}
	famEngineRing    = &family.Family{Name: "udpstp_engine_ring_plans_total",
		Help: "Send plans the Engine Threads handed to the kernel through io_uring (UDPSTP_ENGINE_URING=1)", Type: family.Counter}
	famEngineBusy = &family.Family{Name: "udpstp_engine_busy_seconds_total",
		Help: "Time the Engine Threads spent out of their waits, added up (also runnable but not running)", Type: family.Counter}
	famBuildInfo = &family.Family{Name: "udpstp_build_info", Help: "udpstp's build: 1, with its version, commit and Go toolchain as labels",
		Type: family.Gauge, Labels: []string{"version", "revision", "goversion", "goos", "goarch"}}
	famArchiveWaiting = &family.Family{Name: "udpstp_archive_records_waiting",
		Help: "Records in the archive's spool waiting for the remote result store", Type: family.Gauge}
	famArchiveRecords = &family.Family{Name: "udpstp_archive_records_total",
		Help: "Records of served tests the archive wrote, failed to write, or dropped", Type: family.Counter, Labels: []string{"result"}}
	famNetnsRcvbuf = &family.Family{Name: "udpstp_netns_udp_receive_buffer_errors_total",
		Help: "UDP datagrams the kernel dropped for a full receive buffer, on any UDP socket of the server's network namespace",
		Type: family.Counter, Labels: []string{"family"}}
	famNetnsSndbuf = &family.Family{Name: "udpstp_netns_udp_send_buffer_errors_total",
		Help: "UDP datagrams the kernel refused for a full send buffer, on any UDP socket of the server's network namespace",
		Type: family.Counter, Labels: []string{"family"}}
	famNetnsReasm = &family.Family{Name: "udpstp_netns_ip_reassembly_failures_total",
		Help: "IP fragments or datagrams the kernel failed to reassemble other than by timeout (a full reassembly memory, most often), in the server's network namespace",
		Type: family.Counter, Labels: []string{"family"}}
)

// Pool reports a pool's Engine Threads: how many run and may run, the
// Test Connections they serve, their turns and wake-ups, the send plans
// they handed over through io_uring, and the time
// they spent out of their waits (the rate of
// udpstp_engine_busy_seconds_total is the pool's busy share in threads;
// divided by udpstp_engine_threads, the share of each).
func Pool(stats func() engine.PoolStats) Source {
	return func(emit func(family.Sample)) {
		st := stats()
		emit(family.Sample{Family: famEngineThreads, Value: float64(st.Threads)})
		emit(family.Sample{Family: famEngineThreadsMax, Value: float64(st.MaxThreads)})
		emit(family.Sample{Family: famEngineConns, Value: float64(st.Conns)})
		emit(family.Sample{Family: famEngineTurns, Value: float64(st.Turns)})
		emit(family.Sample{Family: famEngineWakeups, Value: float64(st.Wakeups)})
		emit(family.Sample{Family: famEngineRing, Value: float64(st.RingPlans)})
		if engine.PoolSupported {
			emit(family.Sample{Family: famEngineBusy, Value: st.Busy.Seconds()})
		}
	}
}

// BuildInfo is what a binary knows about its build.
type BuildInfo struct {
	Version   string // the release, e.g. "v1.2.3"
	Revision  string // the VCS commit, "" when not recorded
	GoVersion string // e.g. "go1.26.8"; "" means runtime.Version()
}

// Build reports udpstp_build_info, 1 with the build in its labels (the
// labels of Prometheus's own *_build_info).
func Build(b BuildInfo) Source {
	if b.GoVersion == "" {
		b.GoVersion = runtime.Version()
	}
	return func(emit func(family.Sample)) {
		emit(family.Sample{Family: famBuildInfo, Values: []string{b.Version, b.Revision, b.GoVersion, runtime.GOOS, runtime.GOARCH},
			Value: 1})
	}
}

// Archive reports the server's archive (package server/archive): the
// records of tests written, refused by a file or the store, and dropped
// (they came while it closed), and, with a spool (a remote --store), how
// many records wait in it. counts and waiting are called once per scrape.
func Archive(counts func() (written, failed, dropped uint64), waiting func() (int, bool)) Source {
	return func(emit func(family.Sample)) {
		if n, ok := waiting(); ok {
			emit(family.Sample{Family: famArchiveWaiting, Value: float64(n)})
		}
		w, f, d := counts()
		for _, c := range []struct {
			result string
			n      uint64
		}{{"written", w}, {"failed", f}, {"dropped", d}} {
			emit(family.Sample{Family: famArchiveRecords, Values: []string{c.result}, Value: float64(c.n)})
		}
	}
}
