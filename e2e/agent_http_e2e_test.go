//go:build linux && !small

package e2e

// The agent's HTTP surface attacked through the binary (docs/security.md,
// "The agent's HTTP surface"): a foreign Host on the page, a thousand idle
// keep-alive connections, and /probe's rate bound against a real server.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/store"
)

// agentRequest sends method path to a with the Host given and returns the
// status and body, waiting at most wait.
func agentRequest(t *testing.T, a *agentProc, method, host, path string, body io.Reader, wait time.Duration) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAgentHTTPIdleE2E: the agent's page refuses a foreign Host (DNS
// rebinding) with its token unread and no test run; then 1,000 keep-alive
// connections, each with a request: the agent holds at most
// [http] max_connections of them at once (its descriptors bounded), and
// closes each after the idle timeout, so that every one ends.
func TestAgentHTTPIdleE2E(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, "[http]\nmax_connections = 32\nidle_timeout = \"250ms\"\nread_header_timeout = \"1s\"\n\n"+
		"[[test]]\nname = \"t\"\nservers = [\"127.0.0.1:9\"]\ndirection = \"down\"\ncron = \"@yearly\"\n")
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")
	pid := a.cmd.Process.Pid

	// The page and run now under a rebinding name: refused before any
	// work; under the agent's address: the page.
	for _, path := range []string{"/", "/live", "/events", "/metrics"} {
		if code, body := agentRequest(t, a, http.MethodGet, "rebind.attacker.example", path, nil, 10*time.Second); code != http.StatusMisdirectedRequest {
			t.Errorf("GET %s, foreign Host: %d %.100s", path, code, body)
		}
	}
	if code, body := agentRequest(t, a, http.MethodPost, "rebind.attacker.example", "/run", strings.NewReader("test=t"), 10*time.Second); code != http.StatusMisdirectedRequest {
		t.Errorf("POST /run, foreign Host: %d %.100s", code, body)
	}
	if code, body := agentRequest(t, a, http.MethodGet, "", "/", nil, 10*time.Second); code != http.StatusOK || !strings.Contains(body, "csrf") {
		t.Errorf("the page at its own address: %d %.100s", code, body)
	}
	if rows := a.results(t, store.Filter{}); len(rows) != 0 {
		t.Errorf("results after refused requests: %+v", rows)
	}

	fd0 := procFDs(t, pid)
	const bound = 32 + 16 // max_connections and room for the agent's own
	conns := dialMany(t, strings.TrimPrefix(a.base, "http://"), 1000, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	var ended atomic.Int64
	for _, c := range conns {
		go func() {
			// The answer, then the agent's close of the idle connection
			// (EOF); a connection never closed stays here until the
			// test's cleanup closes it.
			io.Copy(io.Discard, c)
			ended.Add(1)
		}()
	}
	peak := 0
	await.True(t, "every connection answered and closed by the agent", func() bool {
		peak = max(peak, procFDs(t, pid))
		return ended.Load() == int64(len(conns))
	})
	t.Logf("1,000 keep-alive connections: descriptors %d before, %d at most", fd0, peak)
	if peak > fd0+bound {
		t.Errorf("the agent held %d descriptors (%d before): its connections are not bounded", peak, fd0)
	}
	await.True(t, "the agent's descriptors back", func() bool { return procFDs(t, pid) <= fd0+2 })
}

var probeMaxRe = regexp.MustCompile(`(?m)^udpstp_probe_capacity_bytes_per_second\{result="max"\} (\S+)$`)

// TestAgentProbeRateBoundE2E: with [probe] max_rate_mbps, a /probe test's
// automatic search against our server on loopback (which would climb far
// higher) stays at or below the bound, downstream and upstream.
func TestAgentProbeRateBoundE2E(t *testing.T) {
	e2e(t)
	const bound = 40 // Mbit/s
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "127.0.0.1")
	live := fmt.Sprintf("127.0.0.1:%d", port)
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf("[probe]\nmin_interval = \"1s\"\nmax_duration = \"10s\"\ntargets = [%q]\nmax_rate_mbps = %d\n", live, bound))
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")
	for _, dir := range []string{"down", "up"} {
		var body string
		await.True(t, "a probe "+dir, func() bool {
			var code int
			code, body = agentRequest(t, a, http.MethodGet, "", "/probe?target="+url.QueryEscape(live)+"&direction="+dir+"&duration=5", nil, 60*time.Second)
			return code != http.StatusTooManyRequests // the interval since the last probe
		})
		m := probeMaxRe.FindStringSubmatch(body)
		if m == nil || !strings.Contains(body, "udpstp_probe_success 1") {
			t.Fatalf("%s: no maximum in the probe's answer:\n%s", dir, body)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: maximum %.1f Mbit/s, bound %d Mbit/s", dir, v*8/1e6, bound)
		if v*8/1e6 > bound {
			t.Errorf("%s: maximum %.1f Mbit/s above the bound of %d Mbit/s", dir, v*8/1e6, bound)
		}
	}
}
