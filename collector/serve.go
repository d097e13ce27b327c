//go:build !small

package collector

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/udpstp/udpstp/internal/listenaddr"
	"github.com/udpstp/udpstp/metrics"
	"github.com/udpstp/udpstp/store"
	"github.com/udpstp/udpstp/web"
)

// ServeConfig is what `udpstp collector` was told.
type ServeConfig struct {
	Listen string // the probes' HTTPS address
	// HTTP is the fleet's page and /metrics: plain HTTP, so loopback only
	// (a reverse proxy of the operator's publishes it, with its own
	// authentication).
	HTTP             string
	TLSCert, TLSKey  string // the collector's certificate and key (PEM)
	ClientCA         string // the collector's CA certificate (ca.crt of `collector ca init`)
	Store            string // sqlite:PATH or postgres://...
	MaxBody          int64
	Rate             float64
	Burst            int
	Log              *slog.Logger
	Ready            func(listen, http net.Addr) // tests read the ports of ":0" from it
	ShutdownDeadline time.Duration
}

// Serve runs a collector until ctx ends.
func Serve(ctx context.Context, sc ServeConfig) error {
	log := sc.Log
	if log == nil {
		log = slog.Default()
	}
	if err := checkLoopback(sc.HTTP); err != nil {
		return err
	}
	certPEM, err := ReadPEM(sc.TLSCert)
	if err != nil {
		return fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := ReadPEM(sc.TLSKey)
	if err != nil {
		return fmt.Errorf("--tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	caPEM, err := ReadPEM(sc.ClientCA)
	if err != nil {
		return fmt.Errorf("--client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("--client-ca %s: no PEM certificate", sc.ClientCA)
	}
	st, err := store.Open(ctx, sc.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := New(Config{Store: st, Log: log, MaxBody: sc.MaxBody, Rate: sc.Rate, Burst: sc.Burst})
	if err != nil {
		return err
	}
	ln, err := net.Listen(listenaddr.Network(sc.Listen), sc.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	defer ln.Close()
	pln, err := net.Listen(listenaddr.Network(sc.HTTP), sc.HTTP)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	defer pln.Close()
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	probes := &http.Server{Handler: srv.Handler(), TLSConfig: TLSConfig(cert, pool),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, ErrorLog: errLog}
	ph, err := PageHandler(st, srv, log)
	if err != nil {
		return err
	}
	page := &http.Server{Handler: ph, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	errc := make(chan error, 2)
	go func() { errc <- probes.ServeTLS(ln, "", "") }()
	go func() { errc <- page.Serve(pln) }()
	log.Info("collector serving", "listen", ln.Addr().String(), "http", pln.Addr().String(), "store", store.Redact(sc.Store))
	if sc.Ready != nil {
		sc.Ready(ln.Addr(), pln.Addr())
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	probes.Shutdown(sctx)
	page.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// PageHandler is what --http serves: the fleet's page over st (package
// web without an agent: no "run now") and /metrics with srv's counts.
func PageHandler(st store.Store, srv *Server, log *slog.Logger) (http.Handler, error) {
	reg, err := metrics.NewRegistry(srv.Metrics())
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg, log))
	mux.Handle("/", web.Handler(web.Config{Store: st, Title: "udpstp collector", Logger: log}))
	return mux, nil
}

// checkLoopback refuses a plain-HTTP address that is not on loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--http %q: the page and /metrics are plain HTTP, so on a loopback address only (127.0.0.1, ::1); publish them through a proxy", addr)
	}
	return nil
}
