//go:build !small

package collector

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/udpstp/udpstp/store"
)

// LoadCredential reads a probe's credential directory: probe.crt and
// probe.key, and ca.crt (the collector's server CA) if there, else the
// system's roots verify the collector.
func LoadCredential(dir string) (*tls.Config, error) {
	certPEM, err := ReadPEM(filepath.Join(dir, ProbeCert))
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	keyPEM, err := ReadPEM(filepath.Join(dir, ProbeKey))
	if err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("credential %s: %w", dir, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	caPEM, err := ReadPEM(filepath.Join(dir, ServerCA))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("credential: %w", err)
	default:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("credential: %s: no PEM certificate", filepath.Join(dir, ServerCA))
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Link is a probe's way to its collector: the base URL, checked once, and
// one HTTP client, so that its uploads (Remote) and its configuration
// (ConfigFetcher) share a TLS connection.
type Link struct {
	base   string // https://HOST[:PORT], without a trailing slash
	client *http.Client
}

// NewLink returns the link to the collector at base (https://...), with
// the TLS configuration of LoadCredential.
func NewLink(base string, tlsCfg *tls.Config) (*Link, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("collector %q: want https://HOST[:PORT]/", base)
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
	return &Link{base: strings.TrimSuffix(u.String(), "/"), client: &http.Client{Transport: tr}}, nil
}

// Close closes the link's idle connections.
func (l *Link) Close() { l.client.CloseIdleConnections() }

// Remote is the store a probe's spool uploads to (store.OpenSpoolTo): Put
// POSTs the result to a collector; reads are the spool's local store's
// (store.SpoolOptions.LocalReads), so Remote answers none.
type Remote struct {
	endpoint string
	client   *http.Client
	log      *slog.Logger
	// refused counts results the collector refused for good (400, 413):
	// they stay in the probe's local store, and the spool goes on with
	// the next rather than retry one that can never go through.
	refused atomic.Uint64
}

var errNoReads = errors.New("collector: reads are the spool's local store's")

// NewRemote returns the Remote of the collector that l leads to.
func NewRemote(l *Link, log *slog.Logger) *Remote {
	if log == nil {
		log = slog.Default()
	}
	return &Remote{endpoint: l.base + "/v1/results", client: l.client, log: log}
}

// Refused is how many results the collector refused for good.
func (r *Remote) Refused() uint64 { return r.refused.Load() }

// Put uploads res. A 2xx is done (a result uploaded twice is stored
// once: the collector answers the retry as a success); a 400 or 413 is
// logged and counted and taken as done, since that document will never
// be taken; anything else (no answer, 401, 403, 429, 5xx) is an error the
// spool retries with its backoff.
func (r *Remote) Put(ctx context.Context, res *store.Result) error {
	u := Upload{ID: res.ID, Test: res.Test, Server: res.Server, Client: res.Client, Start: res.Start, End: res.End,
		Status: res.Status, ErrorStatus: res.ErrorStatus, Warning: res.Warning}
	if len(res.Doc) > 0 && json.Valid(res.Doc) {
		u.Doc = res.Doc
	}
	body, err := json.Marshal(&u)
	if err != nil {
		return fmt.Errorf("collector upload %s: %w", res.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("collector upload %s: %w", res.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("collector upload %s: %w", res.ID, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge:
		r.refused.Add(1)
		r.log.Error("collector refused a result for good; it stays in the local store only", "id", res.ID,
			"status", resp.StatusCode, "answer", strings.TrimSpace(string(msg)))
		return nil
	}
	return fmt.Errorf("collector upload %s: %s: %s", res.ID, resp.Status, strings.TrimSpace(string(msg)))
}

func (r *Remote) Get(context.Context, string) (*store.Result, error) { return nil, errNoReads }
func (r *Remote) List(context.Context, store.Filter) ([]store.Result, error) {
	return nil, errNoReads
}
func (r *Remote) Series(context.Context, store.Filter, string, int) ([]store.Point, error) {
	return nil, errNoReads
}
func (r *Remote) Fleet(context.Context, store.Filter) (*store.Fleet, error) { return nil, errNoReads }

// Prune prunes nothing: the collector's store is the operator's.
func (r *Remote) Prune(context.Context, store.Retention) (int, error) { return 0, nil }

func (r *Remote) Close() error {
	r.client.CloseIdleConnections()
	return nil
}

var _ store.Store = (*Remote)(nil)
