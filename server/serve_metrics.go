//go:build !small

package server

// --metrics-listen: the server's Prometheus endpoint (package metrics).
// Its sources are the ones -G and STATUS= read: the server's snapshot,
// the test sockets' totals of statsNet, and the pool's counters, read at
// scrape time.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/listenaddr"
	"github.com/udpstp/udpstp/metrics"
)

// metricsEndpoint is the endpoint's listener until it serves; nil: none.
type metricsEndpoint struct {
	ln net.Listener
}

// listenMetrics binds addr ("": no endpoint, a nil endpoint) on the
// families it names (listenaddr.Network).
func listenMetrics(addr string, opt func(string) option) (*metricsEndpoint, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen(listenaddr.Network(addr), addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt("metrics-listen"), err)
	}
	return &metricsEndpoint{ln: ln}, nil
}

// close closes the listener of an endpoint that never served (Serve
// closes it otherwise; a second close does nothing).
func (m *metricsEndpoint) close() {
	if m != nil {
		m.ln.Close()
	}
}

// start serves /metrics, and /readyz (readyHandler) by ready, until ctx
// ends.
func (m *metricsEndpoint) start(ctx context.Context, wg *sync.WaitGroup, srv *control.Server, snet *statsNet, base *enginenet.Net,
	arc *serverArchive, ready func() bool, log *slog.Logger, opt func(string) option) {
	if m == nil {
		return
	}
	sources := []metrics.Source{
		metrics.Server(srv.Snapshot),
		metrics.Sockets(func() (down, up engine.SocketCounts) {
			t := snet.totals()
			return t.down, t.up
		}),
		metrics.UDPNetns(),
		metrics.Build(buildInfo()),
	}
	if pool := base.Pool(); pool != nil {
		sources = append(sources, metrics.Pool(pool.Stats))
	}
	if arc != nil {
		sources = append(sources, metrics.Archive(func() (written, failed, dropped uint64) {
			return arc.Written.Load(), arc.Failed.Load(), arc.Dropped.Load()
		}, arc.Waiting))
	}
	reg, err := metrics.NewRegistry(sources...)
	if err != nil {
		log.Error("metrics endpoint not started", "err", err) // a bug: the collectors are fixed
		return
	}
	log.Info("metrics endpoint", "url", "http://"+m.ln.Addr().String()+"/metrics",
		"readiness", "http://"+m.ln.Addr().String()+readyPath, "health", "http://"+m.ln.Addr().String()+healthPath)
	mux := http.NewServeMux()
	mux.Handle("/", metrics.Handler(reg, log))
	mux.Handle(readyPath, readyHandler(ready))
	mux.Handle(healthPath, healthHandler(arc.health))
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := metrics.Serve(ctx, m.ln, mux, log); err != nil {
			log.Error("metrics endpoint stopped", "option", opt("metrics-listen").String(), "err", err)
		}
	}()
}

// buildInfo is the build the endpoint reports, as `udpstp version` names
// it (internal/buildinfo).
func buildInfo() metrics.BuildInfo {
	i := buildinfo.Get()
	b := metrics.BuildInfo{Version: i.Version, Revision: i.Commit, GoVersion: i.GoVersion}
	if i.Modified && b.Revision != "" {
		b.Revision += "-dirty"
	}
	return b
}

// readyHandler answers 200 while ready() (the server admits tests), 503
// once it drains or stops. The endpoint is served once the control
// sockets are open, so it never says ready before they are; a probe
// that comes earlier waits in the listener's backlog.
func readyHandler(ready func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "draining: not admitting new tests")
			return
		}
		fmt.Fprintln(w, "ready: admitting tests")
	})
}

// healthPath is the health endpoint on the metrics listener: 503 while
// the server's records are not being stored (serverArchive.health), for
// an alert; not a liveness probe (a restart does not mend a store) nor
// readiness (tests are served, their records wait on disk).
const healthPath = "/healthz"

// healthHandler answers 200 while health() is nil, else 503 with the
// kind of trouble and how many records wait, but not the store's own
// error (the log has it): the listener may be reachable by more than the
// operator (docs/security.md, "The server's result store").
func healthHandler(health func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := health(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "unhealthy: records of tests are not being stored; see the log and udpstp_archive_records_waiting")
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
