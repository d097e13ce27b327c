package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// NewRegistry returns a registry with a Collector over sources and the
// client library's Go runtime and process collectors (go_*, process_*),
// which every Prometheus exporter has.
func NewRegistry(sources ...Source) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		NewCollector(sources...),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return reg, nil
}

// Limits of the endpoint, for a scraper and against a client that holds
// connections open: a scrape is small and quick, nothing else is served.
// maxConns bounds the connections held at once, and with them the
// descriptors and memory the endpoint can take from the server's tests: a
// connection past it waits in the kernel's accept queue, holding no
// descriptor of ours, until one ends (a connection that sends nothing
// ends after headerTimeout, an idle keep-alive one after idleTimeout).
// A Prometheus server keeps one connection per target.
const (
	maxConns        = 32
	scrapeTimeout   = 10 * time.Second
	maxScrapes      = 4 // scrapes served at once; more get 503
	headerTimeout   = 5 * time.Second
	idleTimeout     = 60 * time.Second
	maxHeaderBytes  = 16 << 10
	shutdownTimeout = 2 * time.Second
)

// Handler serves /metrics from reg in the Prometheus text format or
// OpenMetrics, whichever the scraper's Accept header prefers (Prometheus
// asks for OpenMetrics), compressed when asked; / says where the metrics
// are. A metric that cannot be gathered is logged and left out; the rest
// is served.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		EnableOpenMetrics:   true,
		ErrorHandling:       promhttp.ContinueOnError,
		ErrorLog:            errorLog{log},
		MaxRequestsInFlight: maxScrapes,
		Timeout:             scrapeTimeout,
	})))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "udpstp server: Prometheus metrics at /metrics")
	})
	return mux
}

// errorLog hands promhttp's errors to the server's log.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Println(v ...any) { e.log.Warn("metrics: " + fmt.Sprint(v...)) }

// Serve serves h on ln, at most maxConns connections at once, until ctx
// ends, then closes the listener and lets a scrape in progress finish,
// briefly. It returns nil after ctx ended,
// else why serving stopped.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       headerTimeout,
		WriteTimeout:      scrapeTimeout + headerTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(netutil.LimitListener(ln, maxConns)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		srv.Close()
	}
	<-errc
	return nil
}
