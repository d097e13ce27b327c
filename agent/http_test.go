package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
)

// get sends a GET of path to srv with the Host and headers given, and
// returns the status and body.
func get(t *testing.T, srv *httptest.Server, host, path string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A page of another site that DNS rebinding points at the agent reaches
// its listener with that site's name as Host: every path, the page's too,
// is refused (421) before any work; no test starts, nothing is stored.
// Loopback names, address literals, the listener's own name and [http]
// hosts are answered.
func TestAgentHTTPForeignHost(t *testing.T) {
	fc := &fakeClient{}
	cfg := Default()
	cfg.ProbeInterval = time.Nanosecond
	cfg.ProbeTargets = []string{"s2"}
	cfg.HTTP.Hosts = []string{"probe1.example.net"}
	a, st := newTestAgent(t, cfg, fc, nil)
	var pageHits atomic.Int32
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pageHits.Add(1)
		io.WriteString(w, "page")
	})
	srv := httptest.NewServer(a.Handler(page, "agent.lan:8080"))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"rebind.attacker.example", fmt.Sprintf("rebind.attacker.example:%d", port),
		"0.0.0.0", fmt.Sprintf("[::]:%d", port), "localhost.attacker.example", "probe1.example.net.attacker.example"} {
		for _, path := range []string{"/", "/metrics", "/healthz", "/probe?target=s2", "/events", "/result/x"} {
			if code, body := get(t, srv, host, path); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %s %s: %d %.80s", host, path, code, body)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/run", strings.NewReader("test=a"))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if resp, err := srv.Client().Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %s POST /run: %v %v", host, resp, err)
		} else {
			resp.Body.Close()
		}
	}
	if pageHits.Load() != 0 || fc.started.Load() != 0 || len(st.all()) != 0 {
		t.Fatalf("a foreign Host did work: page %d, tests %d, stored %d", pageHits.Load(), fc.started.Load(), len(st.all()))
	}
	for _, host := range []string{"", "localhost", fmt.Sprintf("LOCALHOST:%d", port), "[::1]:1", "127.0.0.1", "198.18.0.1:8080",
		"probe1.example.net", "Probe1.Example.Net.:8080", "agent.lan", "x.localhost"} {
		if code, body := get(t, srv, host, "/"); code != http.StatusOK || body != "page" {
			t.Errorf("Host %q: %d %.80s", host, code, body)
		}
	}
	if code, body := get(t, srv, "localhost", "/probe?target=s2"); code != http.StatusOK {
		t.Errorf("a probe from localhost: %d %s", code, body)
	}
	if fc.started.Load() != 1 {
		t.Errorf("%d tests, want 1", fc.started.Load())
	}
}

// /probe runs a test on a GET: a browser's request from another site (an
// <img> of any page the owner visits) is refused by what the browser says
// (Sec-Fetch-Site, else Origin); a scraper, which sends neither, and the
// owner's own address bar (Sec-Fetch-Site: none) are not.
func TestProbeCrossSite(t *testing.T) {
	fc := &fakeClient{}
	cfg := Default()
	cfg.ProbeInterval = time.Nanosecond
	cfg.ProbeTargets = []string{"s2"}
	a, st := newTestAgent(t, cfg, fc, nil)
	srv := httptest.NewServer(a.Handler(nil))
	defer srv.Close()
	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Sec-Fetch-Site", "cross-site", "Origin", srv.URL},
		{"Origin", "http://attacker.example"},
		{"Origin", "null"},
	} {
		if code, body := get(t, srv, "", "/probe?target=s2", hdr...); code != http.StatusForbidden {
			t.Errorf("%v: %d %s", hdr, code, body)
		}
	}
	if fc.started.Load() != 0 || len(st.all()) != 0 {
		t.Fatalf("a cross-site request started a test: %d, stored %d", fc.started.Load(), len(st.all()))
	}
	for i, hdr := range [][]string{nil, {"Sec-Fetch-Site", "none"}, {"Sec-Fetch-Site", "same-origin"}, {"Origin", srv.URL}} {
		if code, body := get(t, srv, "", "/probe?target=s2", hdr...); code != http.StatusOK {
			t.Errorf("%v: %d %s", hdr, code, body)
		}
		if got := fc.started.Load(); got != int32(i+1) {
			t.Errorf("%v: %d tests, want %d", hdr, got, i+1)
		}
	}
}

// udpCounter is a UDP listener that counts what reaches it.
type udpCounter struct {
	conn *net.UDPConn
	n    atomic.Int64
}

func newUDPCounter(t *testing.T) *udpCounter {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	u := &udpCounter{conn: c}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := c.ReadFromUDP(buf); err != nil {
				return
			}
			u.n.Add(1)
		}
	}()
	return u
}

func (u *udpCounter) port() int { return u.conn.LocalAddr().(*net.UDPAddr).Port }

// A target not in [probe] targets, and unspecified addresses (which reach
// the local host), are refused before any lookup or packet: with the real
// client and network, a UDP listener at the refused target gets nothing,
// while one at a configured target gets the Setups of the probe that
// followed.
func TestProbeUnconfiguredTarget(t *testing.T) {
	refused, allowed := newUDPCounter(t), newUDPCounter(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Default()
	cfg.ProbeInterval = time.Nanosecond
	live := fmt.Sprintf("127.0.0.1:%d", allowed.port())
	// Unspecified addresses set here as a file could not: the handler
	// refuses them too.
	cfg.ProbeTargets = []string{live, fmt.Sprintf("0.0.0.0:%d", refused.port()), "::", "srv:0.0.0.0"}
	st := &memStore{}
	a := New(cfg, Options{Store: st, Identity: "probe-1", Parse: fakeParse, Log: log,
		Network: func() (control.Network, func()) { return enginenet.NewClient(enginenet.Options{Log: log}) }})
	srv := httptest.NewServer(a.Handler(nil))
	defer srv.Close()
	for _, target := range []string{
		fmt.Sprintf("127.0.0.1:%d", refused.port()), fmt.Sprintf("localhost:%d", refused.port()),
		fmt.Sprintf("127.0.0.1:%d ", allowed.port()), fmt.Sprintf("srv:127.0.0.1:%d", refused.port()),
	} {
		code, body := get(t, srv, "", "/probe?target="+url.QueryEscape(target)+"&duration=5")
		if code != http.StatusForbidden || !strings.Contains(body, "[probe] targets") {
			t.Errorf("unconfigured %q: %d %s", target, code, body)
		}
	}
	for _, target := range []string{fmt.Sprintf("0.0.0.0:%d", refused.port()), "::"} {
		if code, body := get(t, srv, "", "/probe?target="+url.QueryEscape(target)+"&duration=5"); code != http.StatusBadRequest {
			t.Errorf("unspecified %q: %d %s", target, code, body)
		}
	}
	if n := len(st.all()); n != 0 {
		t.Errorf("refused probes stored %d results", n)
	}
	// Nothing answers at the configured target: its Setups arrive, and
	// the probe ends after the Setup timer.
	ctx, cancel := context.WithTimeout(context.Background(), 2*control.SetupTimeout+30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/probe?target="+live+"&duration=5", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if allowed.n.Load() == 0 {
		t.Fatal("the configured target got no Setup: the counters see nothing")
	}
	if n := refused.n.Load(); n != 0 {
		t.Errorf("the refused targets' listener got %d datagrams", n)
	}
}

// hostileQueries are /probe queries an attacker sends: huge, not UTF-8,
// escapes that decode to either, keys of every kind.
func hostileQueries() []string {
	big := strings.Repeat("a", 1<<20)
	return []string{
		"target=" + big,
		"target=s2" + big,
		"target=%ff%fe",
		"target=s2%ff",
		"target=s2&direction=%c3%28",
		"target=s2&%ff=1",
		"target=%00",
		"target=s2:%ff",
		"target=s2;x",
		"target=%",
		"target=s2&duration=99999999999999999999",
		"target=srv:" + strings.Repeat("x.", 200),
		strings.Repeat("&", 10000),
		"target=" + url.QueryEscape(string([]byte{0xed, 0xa0, 0x80})),
	}
}

// Hostile queries: 400 or 403, never a panic, no test, nothing stored,
// and /metrics no larger: no label is made of a request's value.
func TestProbeHostileQueries(t *testing.T) {
	fc := &fakeClient{}
	cfg := Default()
	cfg.ProbeInterval = time.Nanosecond
	cfg.ProbeTargets = []string{"s2"}
	a, st := newTestAgent(t, cfg, fc, nil)
	h := a.Handler(nil)
	metricsSize := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/metrics", nil))
		// The Go collector's figures move with the test's own memory:
		// count the agent's families only.
		n := 0
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, "udpstp_") {
				n += len(l)
			}
		}
		return n
	}
	before := metricsSize()
	for _, q := range hostileQueries() {
		req := httptest.NewRequest(http.MethodGet, "http://localhost/probe", nil)
		req.URL.RawQuery = q
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusForbidden {
			t.Errorf("%.60q: %d %.200s", q, rec.Code, rec.Body.String())
		}
		if rec.Body.Len() > 1024 {
			t.Errorf("%.60q: a %d-byte answer", q, rec.Body.Len())
		}
	}
	// The same over a real listener (a 100 kB target: under net/http's
	// header limit).
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, q := range []string{"target=" + strings.Repeat("b", 100<<10), "target=%ff%ff"} {
		if code, body := get(t, srv, "", "/probe?"+q); code != http.StatusBadRequest && code != http.StatusForbidden {
			t.Errorf("listener %.60q: %d %.200s", q, code, body)
		}
	}
	if fc.started.Load() != 0 || len(st.all()) != 0 {
		t.Errorf("hostile queries ran %d tests, stored %d", fc.started.Load(), len(st.all()))
	}
	if after := metricsSize(); after != before {
		t.Errorf("/metrics grew from %d to %d bytes of udpstp_ families", before, after)
	}
}

// FuzzProbeQuery: no query panics /probe, and only a configured target
// runs a test.
func FuzzProbeQuery(f *testing.F) {
	for _, q := range hostileQueries() {
		if len(q) < 4096 {
			f.Add(q)
		}
	}
	f.Add("target=s2&direction=up&duration=5")
	fc := &fakeClient{}
	cfg := Default()
	cfg.ProbeInterval = time.Nanosecond
	cfg.ProbeTargets = []string{"s2"}
	a := New(cfg, Options{Store: &memStore{}, Identity: "p", Parse: fakeParse, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Network: func() (control.Network, func()) { return nil, func() {} }})
	a.runClient = fc.run
	h := a.Handler(nil)
	f.Fuzz(func(t *testing.T, q string) {
		req := httptest.NewRequest(http.MethodGet, "http://localhost/probe", nil)
		req.URL.RawQuery = q
		rec := httptest.NewRecorder()
		before := fc.started.Load()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			if v, err := url.ParseQuery(q); err != nil || v.Get("target") != "s2" || fc.started.Load() != before+1 {
				t.Errorf("%q: 200 without a configured target's test", q)
			}
		case http.StatusBadRequest, http.StatusForbidden, http.StatusTooManyRequests:
		default:
			t.Errorf("%q: %d", q, rec.Code)
		}
	})
}
