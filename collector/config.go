//go:build !small

package collector

// Central configuration: a probe's agent configuration set on the
// collector (`udpstp collector config set`) and fetched by the agent
// (GET /v1/config) at start, every Every and on SIGHUP. The last good
// one is kept in a file beside the spool, which the agent runs as its
// --config: a fetch that fails, or a configuration the agent's parser
// refuses, leaves it in force (docs/fleet.md, "Central configuration").

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// DefaultConfigEvery is how often an agent asks its collector for its
// configuration: a change reaches the fleet within minutes, and a
// thousand probes ask about three times a second.
const DefaultConfigEvery = 5 * time.Minute

// ConfigFetcher keeps an agent's configuration file in step with its
// collector's.
type ConfigFetcher struct {
	url    string
	client *http.Client
	// Path is the last good configuration, the agent's --config.
	Path string
	// Parse validates a configuration as the agent reads a local file
	// (agent.Parse); the name is for its messages.
	Parse func(name string, b []byte) error
	// MaxSize bounds a configuration (agent.MaxConfigSize).
	MaxSize int64
	Every   time.Duration // 0: DefaultConfigEvery
	Log     *slog.Logger
	// Reload tells the agent to read Path again (its reload channel,
	// agent.ServeConfig.Reload); nil: nothing told.
	Reload func()
}

// fetchTimeout bounds one fetch, the answer's body included.
const fetchTimeout = time.Minute

// NewConfigFetcher returns the fetcher of the collector that l leads to,
// keeping its last good configuration at path.
func NewConfigFetcher(l *Link, path string) *ConfigFetcher {
	return &ConfigFetcher{url: l.base + "/v1/config", client: l.client, Path: path, MaxSize: 1 << 20}
}

// Hash is a configuration's short hash, as the log names it.
func Hash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

func (f *ConfigFetcher) log() *slog.Logger {
	if f.Log == nil {
		return slog.Default()
	}
	return f.Log
}

// Fetch asks the collector once. A configuration that parses and differs
// from the file's is written to Path (changed true); anything else leaves
// the file as it is, with an error saying why.
func (f *ConfigFetcher) Fetch(ctx context.Context) (changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return false, fmt.Errorf("config fetch: %w", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("config fetch: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxSize+1))
	if err != nil {
		return false, fmt.Errorf("config fetch: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("config fetch: %s: %.200s", resp.Status, strings.TrimSpace(string(b)))
	}
	if int64(len(b)) > f.MaxSize {
		return false, fmt.Errorf("config fetch: over %d bytes", f.MaxSize)
	}
	if err := f.Parse("collector:"+f.url, b); err != nil {
		return false, fmt.Errorf("config fetch: refused: %w", err)
	}
	old, err := atomicfile.ReadFile(f.Path, f.MaxSize)
	if err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	if err := atomicfile.Write(f.Path, b, 0o600); err != nil {
		return false, fmt.Errorf("config fetch: keeping it: %w", err)
	}
	return true, nil
}

// Start fetches once, before the agent starts, so that it runs the
// collector's configuration when it answers, else the last good one (an
// empty one, no tests, when there is none yet), and logs which.
func (f *ConfigFetcher) Start(ctx context.Context) error {
	_, err := f.Fetch(ctx)
	b, rerr := atomicfile.ReadFile(f.Path, f.MaxSize)
	switch {
	case errors.Is(rerr, os.ErrNotExist):
		if werr := atomicfile.Write(f.Path, nil, 0o600); werr != nil {
			return fmt.Errorf("config: %w", werr)
		}
		f.log().Warn("agent configuration: none from the collector yet and none kept: no tests until one comes", "err", err)
	case rerr != nil:
		return fmt.Errorf("config: %w", rerr)
	case err != nil:
		f.log().Warn("agent configuration: the collector's could not be had; running the last good one", "source", f.Path, "hash", Hash(b), "err", err)
	default:
		f.log().Info("agent configuration from the collector", "source", f.url, "hash", Hash(b), "kept", f.Path)
	}
	return nil
}

// Run fetches every Every, and at each request on hup (the process's
// SIGHUP, which the command catches), until ctx ends. The agent is told
// to reload when the configuration changed, and after every request on
// hup: an operator's SIGHUP reloads the agent, fetched or not.
func (f *ConfigFetcher) Run(ctx context.Context, hup <-chan struct{}) {
	every := f.Every
	if every <= 0 {
		every = DefaultConfigEvery
	}
	reload := f.Reload
	if reload == nil {
		reload = func() {}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		asked := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-hup:
			asked = true
		}
		fctx, cancel := context.WithTimeout(ctx, time.Minute)
		changed, err := f.Fetch(fctx)
		cancel()
		switch {
		case err != nil:
			f.log().Warn("agent configuration: the collector's could not be had or was refused; the one in force stays", "err", err)
		case changed:
			b, _ := atomicfile.ReadFile(f.Path, f.MaxSize)
			f.log().Info("agent configuration from the collector changed; reloading", "source", f.url, "hash", Hash(b))
		}
		if changed || asked {
			reload()
		}
	}
}
