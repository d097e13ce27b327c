//go:build linux

package server

// The service's parts in-process: the watchdog with a wedged Engine
// Thread, the journald lines, the -l file's rotation, the file options
// made absolute. e2e/service_test.go runs the service in the
// built binary.

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/engine"
	"github.com/udpstp/udpstp/internal/sdnotify"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// wedgeCore is a Data Phase core whose first turn never ends until
// released: a wedged Engine Thread.
type wedgeCore struct {
	entered, release chan struct{}
	once             sync.Once
	done, ended      atomic.Bool
}

var _ dataphase.Core = (*wedgeCore)(nil)

func (c *wedgeCore) Poll(clock.Pair, *dataphase.SendBuffer) bool {
	c.once.Do(func() {
		close(c.entered)
		<-c.release
		c.done.Store(true)
	})
	return false
}
func (c *wedgeCore) Sent(int)                     {}
func (c *wedgeCore) Receive(*dataphase.RecvBatch) {}
func (c *wedgeCore) Deadline() clock.Time         { return 0 }
func (c *wedgeCore) Stop()                        {}
func (c *wedgeCore) Fail(error)                   {}
func (c *wedgeCore) Done() bool                   { return c.done.Load() }
func (c *wedgeCore) Events() []dataphase.Event {
	if c.done.Load() && !c.ended.Swap(true) {
		return []dataphase.Event{{Kind: dataphase.EvEnd, End: dataphase.EndStopped}}
	}
	return nil
}

// TestWatchdogStopsWhenWedged: WATCHDOG=1 goes out every half interval
// while the Engine Threads make progress, stops while one is stuck inside
// a turn, and resumes when it moves again.
func TestWatchdogStopsWhenWedged(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	const interval = 400 * time.Millisecond // a ping every 200 ms, wedged after 100 ms in a turn
	limit := watchdogLimit(interval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// The watchdog's own checks and pings are counted as it makes them
	// (it makes them one after the other on its goroutine), so the test
	// knows exactly which pings came after it saw the thread wedged,
	// however late a busy machine runs it.
	var checks, wedgedChecks, sent atomic.Int64
	var sentAtWedge atomic.Int64
	sentAtWedge.Store(-1)
	stalled := func() int {
		k := engine.Stalled(limit)
		checks.Add(1)
		if k > 0 {
			if wedgedChecks.Add(1) == 1 {
				sentAtWedge.Store(sent.Load())
			}
		}
		return k
	}
	send := func(m string) {
		if m == "WATCHDOG=1" {
			sent.Add(1)
		}
	}
	go func() {
		sdnotify.RunWatchdog(ctx, engineWatchdog(interval, stalled, log), send)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	await.True(t, "two pings", func() bool { return sent.Load() >= 2 })

	sock, err := engine.OpenUDP(netip.MustParseAddrPort("127.0.0.1:0"), engine.SocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	core := &wedgeCore{entered: make(chan struct{}), release: make(chan struct{})}
	conn := engine.RunConn(sock, core, nil, nil)
	<-core.entered
	// Four checks that find the thread wedged, and no ping since the
	// first of them.
	await.True(t, "four watchdog checks that see the wedged thread", func() bool { return wedgedChecks.Load() >= 4 })
	if got := sent.Load() - sentAtWedge.Load(); got != 0 {
		t.Errorf("%d pings while an Engine Thread was wedged (%d checks saw it)", got, wedgedChecks.Load())
	}
	close(core.release)
	<-conn.Done()
	after := sent.Load()
	await.True(t, "a ping after the thread moved on", func() bool { return sent.Load() > after })
}

// TestAbsPaths: the file options become absolute, so that a daemon in /
// still finds them.
func TestAbsPaths(t *testing.T) {
	so := Options{LogFile: "srv.log", StatsFile: "s_%H.json", KeyFile: "keys"}
	if err := so.absPaths(); err != nil || !filepath.IsAbs(so.LogFile) || !filepath.IsAbs(so.StatsFile) || !filepath.IsAbs(so.KeyFile) {
		t.Errorf("absPaths: %v %+v", err, so)
	}
	so = Options{Archive: ArchiveOptions{Dir: "arc", KeyFile: "arc.key", Store: "sqlite:results.db"}}
	if err := so.absPaths(); err != nil || !filepath.IsAbs(so.Archive.Dir) || !filepath.IsAbs(so.Archive.KeyFile) ||
		!filepath.IsAbs(strings.TrimPrefix(so.Archive.Store, "sqlite:")) {
		t.Errorf("absPaths: %v %+v", err, so.Archive)
	}
	so = Options{Archive: ArchiveOptions{Store: "postgres://h/db"}}
	if so.absPaths(); so.Archive.Store != "postgres://h/db" {
		t.Errorf("absPaths changed a URL: %q", so.Archive.Store)
	}
}

// TestJournalLines: under journald a line has no time of its own and
// starts with its syslog priority; elsewhere it keeps its time.
func TestJournalLines(t *testing.T) {
	var buf bytes.Buffer
	log := newServiceLogger(logOutput{w: &buf, journal: true}, "text", slog.LevelDebug)
	log.Debug("d")
	log.With("peer", "x").Info("i")
	log.Warn("w")
	log.Error("e")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, want := range []string{"<7>level=DEBUG msg=d", "<6>level=INFO msg=i peer=x", "<4>level=WARN msg=w", "<3>level=ERROR msg=e"} {
		if i >= len(lines) || lines[i] != want {
			t.Errorf("line %d: %q, want %q", i, lines, want)
		}
	}
	buf.Reset()
	newServiceLogger(logOutput{w: &buf, journal: true}, "json", slog.LevelInfo).Info("j")
	if got := buf.String(); got != "<6>{\"level\":\"INFO\",\"msg\":\"j\"}\n" {
		t.Errorf("JSON under journald: %q", got)
	}
	buf.Reset()
	newServiceLogger(logOutput{w: &buf}, "text", slog.LevelInfo).Info("t")
	if !strings.HasPrefix(buf.String(), "time=") {
		t.Errorf("a line outside journald lost its time: %q", buf.String())
	}
}

// TestLogRotation: past the limit (counting what the file held when it was
// opened) the log becomes <file>.old, replacing an older one, and a new
// file starts; nothing written is lost.
func TestLogRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "srv.log")
	os.WriteFile(path, bytes.Repeat([]byte("x"), 900), 0o600)
	os.WriteFile(path+".old", []byte("older\n"), 0o600)
	r, err := openRotating(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("y"), 99)
	line = append(line, '\n')
	r.Write(line) // 1000 bytes: not past the limit
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	r.Write(line) // 1100: rotated
	old, _ := os.ReadFile(path + ".old")
	cur, _ := os.ReadFile(path)
	if len(old) != 1100 || len(cur) != 0 {
		t.Errorf(".old %d bytes, new file %d; want 1100 and 0", len(old), len(cur))
	}
	for i := 0; i < 5; i++ {
		r.Write(line)
	}
	r.Close()
	cur, _ = os.ReadFile(path)
	if len(cur) != 500 {
		t.Errorf("new file %d bytes, want 500", len(cur))
	}
	if _, err := r.Write(line); err == nil {
		t.Error("write after Close succeeded")
	}
}
