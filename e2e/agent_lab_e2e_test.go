//go:build !small

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/chromiumtest"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"github.com/udpstp/udpstp/store"
)

// TestAgentE2ELabChromium is the proof in the network lab: the agent
// runs in the client namespace with three tests on a fast schedule, two
// against our server and one against OB-UDPST's (with UDPST_BIN; ours
// otherwise, said in the log), both in the server namespace. Then the
// store, `udpstp history --format json` (the built binary), the page in
// Chromium (each test's last result, the charts' points against the store's
// rows), /metrics (promtool) and /probe scraped by a real Prometheus are
// checked. The loopback TestAgentE2EPrometheus checks failover and reloads.
func TestAgentE2ELabChromium(t *testing.T) {
	processTest(t)
	for _, tool := range []string{"promtool", "prometheus"} {
		if _, err := exec.LookPath(tool); err != nil && os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (apt-get install prometheus; .ci/run does): %v", tool, err)
		}
	}
	chromiumPath := chromiumtest.Path(t)
	promtool := lookTool(t, "promtool")
	promBin := lookTool(t, "prometheus")
	l := netlab.New(t, netlab.Config{})

	ours := netip.AddrPortFrom(l.ServerAddr, labPort).String()
	startServerProc(t, l.Command(l.ServerNS, udpstpBin, "server", "-p", strconv.Itoa(labPort), l.ServerAddr.String()), true).stopAtCleanup(t, "server")
	third := ours
	if ob := optionalUdpstBin(t); ob != "" {
		third = netip.AddrPortFrom(l.ServerAddr, labPort+1).String()
		startServerProc(t, l.Command(l.ServerNS, ob, "-p", strconv.Itoa(labPort+1), l.ServerAddr.String()), false).stopAtCleanup(t, "udpst server")
	} else {
		t.Log("UDPST_BIN is not set: the third test runs against our server, OB-UDPST's leg is not run")
	}
	want := map[string]struct{ server, direction string }{
		"down": {ours, "down"}, "bidi": {ours, "bidirectional"}, "ob-up": {third, "up"},
	}

	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	var tests []fastTest
	for name, w := range want {
		tests = append(tests, fastTest{name, w.direction, []string{w.server}})
	}
	writeAgentFile(t, config, fastConfig(tests...))
	inner := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	a := &agentProc{base: "http://" + forwardIntoNS(t, l, l.ClientNS, inner), store: "sqlite:" + filepath.Join(dir, "results.db")}
	runAgent(t, a, l.Command(l.ClientNS, udpstpBin, "agent", "--http", inner, "--store", a.store,
		"--identity", "probe-lab", "--test-min-every", "1s", "--config", config))
	a.stopAtCleanup(t, "agent")

	// Two results of each test: the page's last result is then one of
	// several.
	for name := range want {
		waitUntil(t, 240*time.Second, "two results of "+name, func() (bool, string) {
			return len(a.results(t, store.Filter{Test: name, Limit: 2})) == 2, a.log()
		})
	}
	for _, r := range a.results(t, store.Filter{}) {
		w, ok := want[r.Test]
		if !ok || r.Agent != "probe-lab" || r.Origin != store.OriginClient {
			t.Errorf("a result of test %q, agent %q, origin %q", r.Test, r.Agent, r.Origin)
			continue
		}
		if r.Server != w.server || r.Direction != w.direction || r.Status != store.StatusOK || r.MaxMbps == nil || *r.MaxMbps <= 0 || r.RTTMinMs == nil {
			t.Errorf("%s: %+v", r.Test, r)
		}
		if r.Test == "bidi" && (r.LoadedMs == nil || r.RPM == nil) {
			t.Errorf("bidi without latency under load or RPM: %+v", r)
		}
	}

	// The page, while the schedules run: the store is read before and
	// after the page is, and the two must agree for the comparison to
	// hold (a result stored in between is a retry).
	b := chromiumtest.New(t, chromiumPath, 3*time.Minute, nil)
	for try := 0; ; try++ {
		before := a.results(t, store.Filter{})
		tests, lines := overview(t, b, a.base+"/?range=7d")
		after := a.results(t, store.Filter{})
		if len(before) != len(after) {
			if try == 20 {
				t.Fatal("the store grew while the page was read, 20 times")
			}
			continue
		}
		checkOverview(t, after, want, tests, lines)
		break
	}
	if p := b.Problems(); len(p) > 0 {
		t.Errorf("the browser's console:\n%s", strings.Join(p, "\n"))
	}

	code, body, err := httpGet(a.base + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	promtoolCheck(t, promtool, "/metrics", body)
	for name, w := range want {
		m := fmt.Sprintf(`udpstp_agent_capacity_bytes_per_second{direction=%q,result="max",server=%q,test=%q}`, w.direction, w.server, name)
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics has no %s", m)
		}
	}

	// The schedules stop (a configuration without tests), then history and
	// /probe.
	writeAgentFile(t, config, "[probe]\nmin_interval = \"1s\"\ntargets = [\""+ours+"\"]\n")
	a.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the configuration without tests", func() (bool, string) {
		return strings.Contains(a.log(), "configuration reloaded"), a.log()
	})
	for try := 0; ; try++ {
		before := a.results(t, store.Filter{})
		out, err := runOutput(exec.Command(udpstpBin, "history", "--store", a.store, "--format", "json", "--limit", "0"))
		if err != nil {
			t.Fatalf("udpstp history: %v", err)
		}
		after := a.results(t, store.Filter{})
		if len(before) != len(after) {
			if try == 20 {
				t.Fatal("the store grew while history read it, 20 times")
			}
			continue
		}
		checkHistoryJSON(t, out, after)
		break
	}

	scrapeProbe(t, promBin, a, ours)
}

// checkOverview compares the overview's tests table (name, the last
// result's ID, its direction) and chart lines (series: points) with the
// store's rows (all in the page's range).
func checkOverview(t *testing.T, rows []store.Result, want map[string]struct{ server, direction string }, tests [][]string, lines map[string]int) {
	t.Helper()
	last := map[string]string{}
	count := map[string]int{}
	for _, r := range rows { // newest first
		if _, ok := last[r.Test]; !ok {
			last[r.Test] = r.ID
		}
		if r.MaxMbps != nil {
			count[map[string]string{"down": "down", "up": "up", "bidirectional": "both at once"}[r.Direction]]++
		}
		if r.RTTMinMs != nil {
			count["RTT minimum"]++
		}
		if r.LoadedMs != nil {
			count["latency under load"]++
		}
	}
	if len(tests) != len(want) {
		t.Errorf("the page's tests table has %d rows, want %d: %q", len(tests), len(want), tests)
	}
	for _, row := range tests {
		w, ok := want[row[0]]
		if !ok || row[1] != "/result/"+last[row[0]] || row[2] != w.direction {
			t.Errorf("the page's row for %q links %q (%s), the store's last result is %s (%s)", row[0], row[1], row[2], last[row[0]], w.direction)
		}
	}
	for series, n := range count {
		if lines[series] != n {
			t.Errorf("chart line %q holds %d points, the store %d rows in range", series, lines[series], n)
		}
	}
	for series := range lines {
		if _, ok := count[series]; !ok && series != "loss" {
			t.Errorf("chart line %q, no row in the store", series)
		}
	}
}

// checkHistoryJSON: history's json lists every stored row, newest first,
// with the store's figures.
func checkHistoryJSON(t *testing.T, out []byte, rows []store.Result) {
	t.Helper()
	var got []store.Row
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("history --format json: %v\n%.500s", err, out)
	}
	if len(got) != len(rows) || len(rows) == 0 {
		t.Fatalf("history lists %d results, the store holds %d", len(got), len(rows))
	}
	for i, r := range rows {
		h := got[i]
		if h.ID != r.ID || h.Test != r.Test || h.Server != r.Server || h.Direction != r.Direction || h.Status != string(r.Status) ||
			!sameFigure(h.MaxMbps, r.MaxMbps) || !sameFigure(h.RTTMinMs, r.RTTMinMs) || !sameFigure(h.LossRatio, r.LossRatio) ||
			!sameFigure(h.LoadedMs, r.LoadedMs) || !sameFigure(h.RPM, r.RPM) {
			t.Errorf("history's row %d: %+v, the store's %+v", i, h, r)
		}
	}
}

func sameFigure(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// forwardIntoNS listens on loopback here and joins each connection to
// target (host:port) inside network namespace ns: the browser, Prometheus
// and the test reach the agent's listener in the lab this way.
func forwardIntoNS(t *testing.T, l *netlab.Lab, ns, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var u net.Conn
				if err := l.Do(ns, func() (err error) {
					u, err = net.DialTimeout("tcp", target, 5*time.Second)
					return err
				}); err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{})
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); close(done) }()
				io.Copy(c, u)
				c.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}
