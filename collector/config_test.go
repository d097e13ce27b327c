//go:build !small

package collector

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// TestConfigFetch: the probe's configuration set on the collector reaches
// its file; one the parser refuses, a collector that refuses the probe
// (revoked) or none set leaves the last good one in force; the
// periodic fetch asks the agent to reload when it changed.
func TestConfigFetch(t *testing.T) {
	g := newRig(t, Config{})
	cred := g.enrol("p")
	tc, err := LoadCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spool.db.config.toml")
	link, err := NewLink(g.ts.URL, tc)
	if err != nil {
		t.Fatal(err)
	}
	f := NewConfigFetcher(link, path)
	f.Parse = func(name string, b []byte) error {
		if strings.Contains(string(b), "bogus") {
			return errors.New(name + ": bogus: unknown field")
		}
		return nil
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ctx := context.Background()
	// None set, none kept: an empty configuration (no tests).
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if read() != "" {
		t.Fatalf("kept %q, want empty", read())
	}
	p := g.st.(store.Probes)
	set := func(s string) {
		if err := p.SetProbeConfig(ctx, "p", []byte(s), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	set("tolerance = \"10m\"\n")
	if changed, err := f.Fetch(ctx); err != nil || !changed || read() != "tolerance = \"10m\"\n" {
		t.Fatalf("fetch: %v %v %q", changed, err, read())
	}
	if changed, err := f.Fetch(ctx); err != nil || changed {
		t.Fatalf("the same again: %v %v", changed, err)
	}
	set("bogus = 1\n")
	if _, err := f.Fetch(ctx); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("a bad configuration: %v", err)
	}
	if read() != "tolerance = \"10m\"\n" {
		t.Fatalf("the last good one was not kept: %q", read())
	}

	// The periodic fetch: a change is written and the agent told.
	reloads := make(chan struct{}, 4)
	f.Every, f.Reload = 20*time.Millisecond, func() { reloads <- struct{}{} }
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(rctx, nil); close(done) }()
	set("tolerance = \"20m\"\n")
	select {
	case <-reloads:
	case <-time.After(await.Deadline):
		t.Fatal("no reload after the configuration changed")
	}
	cancel()
	<-done
	if read() != "tolerance = \"20m\"\n" {
		t.Fatalf("kept %q", read())
	}

	// Revoked: refused, and the file stays.
	if _, err := p.Revoke(ctx, "p", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(ctx); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("revoked: %v", err)
	}
	if err := f.Start(ctx); err != nil || read() != "tolerance = \"20m\"\n" {
		t.Fatalf("start while refused: %v %q", err, read())
	}
}
