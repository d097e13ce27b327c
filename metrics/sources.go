package metrics

import (
	"runtime"
	"strings"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
)

// Server reports a server's counters and gauges as snapshot lists them
// (control.ServerSnapshot.Each: the Control Phase table, the refusals by
// Setup code, the ends by direction and reason, the Data Phase table).
// snapshot is called once per scrape.
func Server(snapshot func() control.ServerSnapshot) Source {
	return func(emit func(Sample)) {
		n := snapshot()
		n.Each(func(m control.Metric) {
			s := Sample{Name: m.Name, Help: m.Help, Kind: Counter, Value: float64(m.Value)}
			if m.Gauge {
				s.Kind = Gauge
			}
			if m.Direction != "" {
				s.Labels = append(s.Labels, Label{"direction", m.Direction})
			}
			if m.Label != "" {
				s.Labels = append(s.Labels, Label{m.Label, m.LabelValue})
			}
			emit(s)
		})
	}
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
	return func(emit func(Sample)) {
		down, up := totals()
		for c := range engine.NumSocketCounters {
			info := c.Info()
			// "socket_errors" stays itself rather than socket_socket_errors.
			name := "socket_" + strings.TrimPrefix(info.Name, "socket_")
			for _, d := range []struct {
				dir string
				n   *engine.SocketCounts
			}{{Downstream, &down}, {Upstream, &up}} {
				emit(Sample{Name: name, Help: info.Help + ", on test sockets", Kind: Counter,
					Labels: []Label{{"direction", d.dir}}, Value: float64(d.n[c])})
			}
		}
	}
}

// Pool reports a pool's Engine Threads: how many run and may run, the
// Test Connections they serve, their turns and wake-ups, and the time
// they spent out of their waits (the rate of
// udpstp_engine_busy_seconds_total is the pool's busy share in threads;
// divided by udpstp_engine_threads, the share of each).
func Pool(stats func() engine.PoolStats) Source {
	return func(emit func(Sample)) {
		st := stats()
		emit(Sample{Name: "engine_threads", Help: "Engine Threads running", Kind: Gauge, Value: float64(st.Threads)})
		emit(Sample{Name: "engine_threads_max", Help: "The most Engine Threads the pool may start (the CPUs the process may use)",
			Kind: Gauge, Value: float64(st.MaxThreads)})
		emit(Sample{Name: "engine_connections", Help: "Test Connections the Engine Threads serve", Kind: Gauge, Value: float64(st.Conns)})
		emit(Sample{Name: "engine_turns", Help: "Turns the Engine Threads ran", Kind: Counter, Value: float64(st.Turns)})
		emit(Sample{Name: "engine_wakeups", Help: "Waits of the Engine Threads that ended", Kind: Counter, Value: float64(st.Wakeups)})
		if engine.PoolSupported {
			emit(Sample{Name: "engine_busy_seconds",
				Help: "Time the Engine Threads spent out of their waits, added up (also runnable but not running)",
				Kind: Counter, Value: st.Busy.Seconds()})
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
	return func(emit func(Sample)) {
		emit(Sample{Name: "build_info", Help: "udpstp's build: 1, with its version, commit and Go toolchain as labels", Kind: Gauge,
			Labels: []Label{{"version", b.Version}, {"revision", b.Revision}, {"goversion", b.GoVersion},
				{"goos", runtime.GOOS}, {"goarch", runtime.GOARCH}},
			Value: 1})
	}
}

// Archive reports the server's archive (package server/archive): the
// records of tests written, refused by a file or the store, and dropped
// (they came while it closed), and, with a spool (a remote --store), how
// many records wait in it. counts and waiting are called once per scrape.
func Archive(counts func() (written, failed, dropped uint64), waiting func() (int, bool)) Source {
	return func(emit func(Sample)) {
		if n, ok := waiting(); ok {
			emit(Sample{Name: "archive_records_waiting", Help: "Records in the archive's spool waiting for the remote result store",
				Kind: Gauge, Value: float64(n)})
		}
		w, f, d := counts()
		for _, c := range []struct {
			result string
			n      uint64
		}{{"written", w}, {"failed", f}, {"dropped", d}} {
			emit(Sample{Name: "archive_records", Help: "Records of served tests the archive wrote, failed to write, or dropped",
				Kind: Counter, Labels: []Label{{"result", c.result}}, Value: float64(c.n)})
		}
	}
}
