package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// fakeClient stands for client.Run: a server "down.example" does not
// answer, "busy.example" refuses, any other takes the test, which lasts
// until release is closed (nil: at once).
type fakeClient struct {
	release chan struct{}
	started atomic.Int32
	active  atomic.Int32
	overlap atomic.Bool
	mu      sync.Mutex
	servers []string
}

func (f *fakeClient) run(ctx context.Context, cfg *control.ClientConfig, o client.Options) int {
	f.mu.Lock()
	f.servers = append(f.servers, cfg.Servers[0].Host)
	f.mu.Unlock()
	switch cfg.Servers[0].Host {
	case "down.example":
		o.Observe(client.Event{Kind: client.EventError, Conn: 0, Code: 1, Text: "WARNING: Timeout awaiting response from server"})
		o.Observe(client.Event{Kind: client.EventEnd, Conn: -1, Status: 1})
		return 1
	case "busy.example":
		o.Observe(client.Event{Kind: client.EventError, Conn: 0, Code: 105, Text: "ERROR: Server busy, capacity exceeded"})
		o.Observe(client.Event{Kind: client.EventEnd, Conn: -1, Status: 105})
		return 105
	}
	if f.active.Add(1) > 1 {
		f.overlap.Store(true)
	}
	defer f.active.Add(-1)
	f.started.Add(1)
	o.Observe(client.Event{Kind: client.EventConnected, Conn: 0, Activated: &control.ClientConn{}})
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}
	io.WriteString(o.Out, `{"ErrorStatus":0}`)
	o.Observe(client.Event{Kind: client.EventEnd, Conn: -1, Status: 0})
	return 0
}

func newTestAgent(t *testing.T, cfg *Config, fc *fakeClient, now func() time.Time) (*Agent, *memStore) {
	t.Helper()
	st := &memStore{}
	a := New(cfg, Options{Store: st, Identity: "probe-1", Parse: fakeParse,
		Network: func() (control.Network, func()) { return nil, func() {} },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)), Rand: rand.New(rand.NewPCG(1, 1)), Now: now})
	a.runClient = fc.run
	return a, st
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse("agent.toml", []byte(doc), LoadOptions{Parse: fakeParse})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const twoTests = `
[[test]]
name = "a"
servers = ["s1"]
direction = "down"
[[test]]
name = "b"
servers = ["s1"]
direction = "both"
`

// One lock for run-now, /probe and the schedules: while a test runs,
// another is refused (run now: ErrBusy; /probe: 429) and never overlaps.
func TestSingleFlight(t *testing.T) {
	fc := &fakeClient{release: make(chan struct{})}
	cfg := mustParse(t, twoTests)
	cfg.ProbeTargets = []string{"s2"}
	a, st := newTestAgent(t, cfg, fc, nil)
	if err := a.RunNow("a"); err != nil {
		t.Fatal(err)
	}
	await.True(t, "test a started", func() bool { return fc.started.Load() == 1 })
	if a.Running() != "a" {
		t.Errorf("Running() = %q", a.Running())
	}
	if err := a.RunNow("b"); !errors.Is(err, ErrBusy) {
		t.Errorf("run now while a runs: %v, want ErrBusy", err)
	}
	srv := httptest.NewServer(a.Handler(nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/probe?target=s2&duration=5")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("/probe while a runs: %d, want 429", resp.StatusCode)
	}
	// A schedule's slot waits for the lock instead of running beside it.
	slotDone := make(chan struct{})
	go func() {
		a.slot(context.Background(), a.Config(), a.test("b"), a.now())
		close(slotDone)
	}()
	close(fc.release)
	<-slotDone
	await.True(t, "idle", func() bool { return a.Running() == "" })
	if fc.overlap.Load() {
		t.Error("two tests ran at once")
	}
	if got := len(st.all()); got != 3 { // a, then b down and up
		t.Errorf("%d results, want 3: %+v", got, st.all())
	}
	if err := a.RunNow("nope"); err == nil || errors.Is(err, ErrBusy) {
		t.Errorf("run now of an unknown test: %v", err)
	}
}

// A slot reached after the machine slept past it is stored as missed,
// with a warning saying why, and the test is not run for it.
func TestMissedSlotAsleep(t *testing.T) {
	var clock atomic.Int64
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	fc := &fakeClient{}
	cfg := mustParse(t, "tolerance = \"1m\"\n[[test]]\nname = \"a\"\nservers = [\"s1\"]\ndirection = \"up\"\nevery = \"6h\"\n")
	a, st := newTestAgent(t, cfg, fc, now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	await.True(t, "the slot drawn", func() bool { return a.sleeps.Load() > 0 })
	// The machine sleeps 20 h: past any slot (at most 2.5 x 6 h).
	clock.Store(t0.Add(20 * time.Hour).UnixNano())
	a.Reload(cfg) // the loop wakes as from its timer
	await.True(t, "a missed slot stored", func() bool { return len(st.all()) >= 1 })
	cancel()
	<-done
	r := st.all()[0]
	if r.Status != store.StatusMissed || !strings.Contains(r.Warning, "asleep") || r.Test != "a" || r.Direction != "up" {
		t.Errorf("missed slot stored as %+v", r)
	}
	if r.ID == "" || r.Agent != "probe-1" || !r.Start.Before(t0.Add(16*time.Hour)) {
		t.Errorf("missed slot: id %q agent %q start %s", r.ID, r.Agent, r.Start)
	}
	if fc.started.Load() != 0 {
		t.Error("the test ran for a missed slot")
	}
}

// Failover: a server that does not answer or refuses passes the test to
// the next; when every one fails, the slot ran: an error (not missed,
// which is a slot the agent did not run), saying why.
func TestFailover(t *testing.T) {
	cfg := mustParse(t, `
[[test]]
name = "f"
servers = ["down.example", "busy.example", "up.example"]
direction = "down"
[[test]]
name = "all-down"
servers = ["down.example", "busy.example"]
direction = "down"
`)
	fc := &fakeClient{}
	a, st := newTestAgent(t, cfg, fc, nil)
	a.slot(context.Background(), cfg, a.test("f"), a.now())
	a.slot(context.Background(), cfg, a.test("all-down"), a.now())
	rows := st.all()
	if len(rows) != 2 {
		t.Fatalf("%d results: %+v", len(rows), rows)
	}
	ok, missed := rows[0], rows[1]
	if ok.Status != store.StatusOK || ok.Server != "up.example:24601" || !strings.Contains(ok.Warning, "failover") ||
		!strings.Contains(ok.Warning, "busy.example:24601") || len(ok.Doc) == 0 {
		t.Errorf("after failover: %+v", ok)
	}
	if missed.Status != store.StatusError || missed.ErrorStatus < 50 || !strings.Contains(missed.Warning, "every server failed") ||
		!strings.Contains(missed.Warning, "Timeout") || !strings.Contains(missed.Warning, "capacity exceeded") {
		t.Errorf("every server failed: %+v", missed)
	}
	if ok.ID == missed.ID {
		t.Error("two results with one ID")
	}
}

// /probe: a bad query is 400, a test's metrics come back, a second probe
// sooner than the interval is 429 with Retry-After, and each test is
// stored.
func TestProbeLimits(t *testing.T) {
	fc := &fakeClient{}
	cfg := Default()
	cfg.ProbeInterval = time.Hour
	cfg.ProbeTargets = []string{"s", "s:x", "s2:25000", "s2"}
	a, st := newTestAgent(t, cfg, fc, nil)
	srv := httptest.NewServer(a.Handler(nil))
	defer srv.Close()
	get := func(q string) (*http.Response, string) {
		resp, err := http.Get(srv.URL + "/probe?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, q := range []string{"", "target=s&direction=sideways", "target=s&duration=0", "target=s&duration=11", "target=s&duration=x", "target=s:x"} {
		if resp, body := get(q); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %d %s", q, resp.StatusCode, body)
		}
	}
	// One message for every bad duration: below the client's 5 s too.
	for _, d := range []string{"0", "3", "11", "x"} {
		if resp, body := get("target=s&duration=" + d); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "want 5 to 10 seconds") {
			t.Errorf("duration=%s: %d %s", d, resp.StatusCode, body)
		}
	}
	resp, body := get("target=s2:25000&direction=up&duration=7")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "udpstp_probe_success 1") || !strings.Contains(body, "udpstp_probe_error_status 0") {
		t.Errorf("probe: %d %s", resp.StatusCode, body)
	}
	resp, body = get("target=s2&duration=5")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second probe within the interval: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	rows := st.all()
	if len(rows) != 1 || rows[0].Test != ProbeTest || rows[0].Server != "s2:25000" || rows[0].Direction != "up" {
		t.Errorf("stored: %+v", rows)
	}
}

// Restore: after a restart, /metrics has the last results again, and the
// cron slots that passed while the agent was stopped are one missed
// result, stored once.
func TestRestore(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	now := t0.Add(5*time.Hour + 30*time.Minute)
	cfg := mustParse(t, "[[test]]\nname = \"hourly\"\nservers = [\"s1\"]\ndirection = \"down\"\ncron = \"0 * * * *\"\n")
	mbps := 93.5
	st := &memStore{}
	st.Put(context.Background(), &store.Result{ID: "old", Test: "hourly", Server: "s1:24601", Direction: "down", Status: store.StatusOK,
		Start: t0.Add(-time.Hour), End: t0.Add(-time.Hour + 10*time.Second), MaxMbps: &mbps})
	st.Put(context.Background(), &store.Result{ID: "last", Test: "hourly", Server: "s1:24601", Direction: "down", Status: store.StatusOK,
		Start: t0, End: t0.Add(10 * time.Second), MaxMbps: &mbps})
	for round := range 2 {
		a := New(cfg, Options{Store: st, Identity: "p", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }})
		if err := a.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		a.Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost:8080/metrics", nil))
		want := `udpstp_agent_capacity_bytes_per_second{direction="down",result="max",server="s1:24601",test="hourly"} 1.16875e+07`
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("round %d: /metrics has no %s", round, want)
		}
	}
	rows := st.all()
	if len(rows) != 3 {
		t.Fatalf("%d results, want the two and one missed: %+v", len(rows), rows)
	}
	m := rows[2]
	if m.Status != store.StatusMissed || !strings.Contains(m.Warning, "5 slot(s)") || !m.Start.Equal(t0.Add(5*time.Hour)) {
		t.Errorf("missed while stopped: %+v", m)
	}
}

// Retention: each stored result prunes the store by the file's retention.
func TestRetentionApplied(t *testing.T) {
	cfg := mustParse(t, "[retention]\nmax_age = \"30d\"\nmax_count = 500\n[[test]]\nname = \"a\"\nservers = [\"s1\"]\ndirection = \"both\"\n")
	a, st := newTestAgent(t, cfg, &fakeClient{}, nil)
	a.slot(context.Background(), cfg, a.test("a"), a.now())
	want := store.Retention{MaxAge: 30 * 24 * time.Hour, MaxCount: 500}
	if len(st.pruned) != 2 || st.pruned[0] != want || st.pruned[1] != want {
		t.Errorf("Prune called with %+v, want %+v after each of two results", st.pruned, want)
	}
}
