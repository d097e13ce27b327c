//go:build !small

package collector

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/metrics"
	"github.com/udpstp/udpstp/metrics/family"
	"github.com/udpstp/udpstp/store"
)

// Upload is what a probe POSTs to /v1/results: one result of its spool.
// The figures are not sent: the collector reads them from Doc itself
// (store.SummarizeInto), and the probe's name from its certificate.
type Upload struct {
	ID          string          `json:"id"`
	Test        string          `json:"test,omitempty"`
	Server      string          `json:"server,omitempty"`
	Client      string          `json:"client,omitempty"`
	Start       time.Time       `json:"start"`
	End         time.Time       `json:"end"`
	Status      store.Status    `json:"status,omitempty"`
	ErrorStatus int             `json:"error_status,omitempty"`
	Warning     string          `json:"warning,omitempty"`
	Doc         json.RawMessage `json:"doc,omitempty"`
}

// Defaults of Config.
const (
	// DefaultMaxBody bounds an upload: a 3600 s test's document at
	// 100 ms Sub-Intervals is a few MB.
	DefaultMaxBody = 16 << 20
	// DefaultRate and DefaultBurst are each probe's token bucket at one
	// collector: a probe uploads a result per test, so one a second is
	// far above its schedule, and a burst of 60 empties a spool that
	// waited through an outage quickly without letting one probe take
	// the collector.
	DefaultRate  = 1.0
	DefaultBurst = 60
	// storeTimeout bounds a request's calls to the store.
	storeTimeout = 10 * time.Second
	// maxField bounds the envelope's text fields.
	maxField = 256
)

// Config is what New serves.
type Config struct {
	// Store keeps the results; it must also be a store.Probes (both SQL
	// engines' stores are).
	Store store.Store
	Log   *slog.Logger
	// MaxBody bounds an upload in bytes (0: DefaultMaxBody); larger is 413.
	MaxBody int64
	// Rate (results a second) and Burst are each probe's token bucket;
	// 0: the defaults.
	Rate  float64
	Burst int
	// Now is the clock of the buckets; nil: time.Now.
	Now func() time.Time
}

// Server answers probes' uploads.
type Server struct {
	cfg    Config
	probes store.Probes
	log    *slog.Logger

	mu      sync.Mutex
	buckets map[string]*bucket // by probe name: enrolled names only, so bounded by the store's

	counts [nOutcomes]atomic.Uint64
}

// The outcomes of an upload, counted for /metrics.
const (
	outStored = iota
	outUnauthenticated
	outForbidden
	outTooLarge
	outInvalid
	outRate
	outStoreError
	nOutcomes
)

var outcomeNames = [nOutcomes]string{"stored", "unauthenticated", "forbidden", "too_large", "invalid", "rate_limited", "store_error"}

// New returns a Server over cfg.
func New(cfg Config) (*Server, error) {
	p, ok := cfg.Store.(store.Probes)
	if !ok {
		return nil, errors.New("collector: the store keeps no probes (want sqlite: or postgres://)")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Server{cfg: cfg, probes: p, log: cfg.Log, buckets: map[string]*bucket{}}, nil
}

// TLSConfig is the probes' listener's: the operator's certificate, and
// the probes' certificates verified against clientCAs by crypto/tls
// before any handler runs. A certificate is asked for, not required, so
// that a request without one gets a 401 that says so rather than a
// handshake failure; one that is given and does not verify ends the
// handshake.
func TLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    clientCAs,
		MinVersion:   tls.VersionTLS12,
	}
}

// Handler serves POST /v1/results.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/results", s.upload)
	mux.HandleFunc("GET /v1/config", s.config)
	return mux
}

// refuse answers a refusal and counts it.
func (s *Server) refuse(w http.ResponseWriter, out, code int, msg string) {
	s.counts[out].Add(1)
	http.Error(w, msg, code)
}

// Identify returns the probe a request's verified certificate names, or
// an HTTP status and why not: 401 without a certificate, 403 for one not
// enrolled, revoked, or whose CN is not the name it was enrolled under,
// 503 when the store does not answer.
func (s *Server) Identify(ctx context.Context, r *http.Request) (string, int, string) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", http.StatusUnauthorized, "a client certificate from the collector's CA is required"
	}
	leaf := r.TLS.VerifiedChains[0][0]
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	name, revoked, err := s.probes.ProbeBySerial(ctx, SerialHex(leaf.SerialNumber))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", http.StatusForbidden, "this certificate is not enrolled"
	case err != nil:
		s.log.Warn("collector: probe lookup failed", "err", err)
		return "", http.StatusServiceUnavailable, "the store does not answer"
	case revoked:
		return "", http.StatusForbidden, "this certificate is revoked"
	case name != leaf.Subject.CommonName:
		return "", http.StatusForbidden, "this certificate's name is not the one it was enrolled under"
	}
	return name, 0, ""
}

// admit identifies the request's probe and takes a token of its bucket,
// or answers the refusal and returns "".
func (s *Server) admit(w http.ResponseWriter, r *http.Request) string {
	name, code, msg := s.Identify(r.Context(), r)
	if code != 0 {
		out := outForbidden
		switch code {
		case http.StatusUnauthorized:
			out = outUnauthenticated
		case http.StatusServiceUnavailable:
			out = outStoreError
		}
		s.refuse(w, out, code, msg)
		return ""
	}
	if wait, ok := s.take(name); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		s.refuse(w, outRate, http.StatusTooManyRequests, "too many requests from this probe; retry later")
		return ""
	}
	return name
}

// config answers GET /v1/config: the probe's agent configuration (TOML),
// 404 when none is set. It takes a token of the probe's bucket as an
// upload does.
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	name := s.admit(w, r)
	if name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	c, err := s.probes.ProbeConfig(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		http.Error(w, "no configuration is set for this probe", http.StatusNotFound)
		return
	case err != nil:
		s.log.Warn("collector: reading a probe's configuration failed", "probe", name, "err", err)
		http.Error(w, "the store does not answer; retry later", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/toml")
	w.Write(c)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	name := s.admit(w, r)
	if name == "" {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.refuse(w, outTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf("an upload is at most %d bytes", s.cfg.MaxBody))
			return
		}
		s.refuse(w, outInvalid, http.StatusBadRequest, "reading the upload: "+err.Error())
		return
	}
	res, err := ResultOf(body, name)
	if err != nil {
		s.refuse(w, outInvalid, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	defer cancel()
	// Put keeps the first of a result uploaded twice (a retry after a
	// lost answer): stored once, and the retry succeeds.
	if err := s.cfg.Store.Put(ctx, res); err != nil {
		s.log.Warn("collector: storing a result failed", "probe", name, "err", err)
		s.refuse(w, outStoreError, http.StatusServiceUnavailable, "the store does not take results now; retry later")
		return
	}
	s.counts[outStored].Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"id\":%q}\n", res.ID)
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ResultOf reads an upload into the result to store for the probe name:
// the figures from its document (store.SummarizeInto), the name from
// the caller (the certificate), never from the upload. The error names
// the field at fault.
func ResultOf(body []byte, name string) (*store.Result, error) {
	var u Upload
	if err := json.Unmarshal(body, &u); err != nil {
		return nil, fmt.Errorf("not an upload (JSON object with id, start, end, doc): %w", err)
	}
	if !uuidRE.MatchString(u.ID) {
		return nil, fmt.Errorf("id: %.60q is not a lower-case UUID", u.ID)
	}
	for f, v := range map[string]string{"test": u.Test, "server": u.Server, "client": u.Client} {
		if len(v) > maxField {
			return nil, fmt.Errorf("%s: %d bytes, at most %d", f, len(v), maxField)
		}
	}
	if len(u.Warning) > 4096 {
		return nil, fmt.Errorf("warning: %d bytes, at most 4096", len(u.Warning))
	}
	r := &store.Result{ID: u.ID, Origin: store.OriginClient, Test: u.Test, Agent: name, Server: u.Server,
		Client: u.Client, Start: u.Start, End: u.End}
	if len(u.Doc) == 0 || string(u.Doc) == "null" {
		// A slot that ran no test (missed) or a test that could not
		// start: no document, no figures.
		switch u.Status {
		case store.StatusMissed, store.StatusError:
		default:
			return nil, fmt.Errorf("doc: missing (only a %q or %q result has none)", store.StatusMissed, store.StatusError)
		}
		r.Status, r.ErrorStatus, r.Warning = u.Status, u.ErrorStatus, u.Warning
	} else if err := store.SummarizeInto(u.Doc, r); err != nil {
		return nil, fmt.Errorf("doc: not an OB-UDPST result: %w", err)
	}
	if r.Start.IsZero() {
		return nil, errors.New("start: missing, and the document has none")
	}
	if r.End.IsZero() {
		r.End = r.Start
	}
	return r, nil
}

// bucket is a token bucket: tokens refill at Rate a second up to Burst.
type bucket struct {
	tokens float64
	last   time.Time
}

// take takes a token of name's bucket, or says how long until one.
func (s *Server) take(name string) (time.Duration, bool) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[name]
	if !ok {
		b = &bucket{tokens: float64(s.cfg.Burst), last: now}
		s.buckets[name] = b
	}
	b.tokens = min(float64(s.cfg.Burst), b.tokens+now.Sub(b.last).Seconds()*s.cfg.Rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return max(time.Second, time.Duration((1-b.tokens)/s.cfg.Rate*float64(time.Second))), false
}

// uploadsFamily counts the uploads by outcome.
var uploadsFamily = &family.Family{Name: "udpstp_collector_uploads_total",
	Help: "Results probes uploaded to the collector, by outcome", Type: family.Counter, Labels: []string{"outcome"}}

// Families are the metric families the collector adds to /metrics.
var Families = []*family.Family{uploadsFamily}

// Metrics reports the uploads by outcome.
func (s *Server) Metrics() metrics.Source {
	return func(emit func(family.Sample)) {
		for i := range nOutcomes {
			emit(family.Sample{Family: uploadsFamily, Values: []string{outcomeNames[i]}, Value: float64(s.counts[i].Load())})
		}
	}
}
