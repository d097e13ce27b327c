//go:build !small

package e2e

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"github.com/udpstp/udpstp/store"
)

// TestAgentLabCrossTraffic: in the network lab, the agent in the client
// namespace tests our server every 2 s (5 s tests at a fixed low rate). A
// second flow from the client namespace (UDP, about 100 Mbit/s, bounded in
// datagrams and time) loads the probe's interface: a test that ran wholly
// while it flowed is marked (CrossBusy, its CrossMbps above the 10 Mbit/s
// threshold), and a test that began after it stopped is not. Nothing is
// judged by time: the flow is ten times the threshold, the threshold far
// above what a 5 Mbit/s test leaves unaccounted; which test ran when is
// read from the results' start and the flow's start and stop.
func TestAgentLabCrossTraffic(t *testing.T) {
	processTest(t)
	l := netlab.New(t, netlab.Config{})
	ours := netip.AddrPortFrom(l.ServerAddr, labPort).String()
	startServerProc(t, l.Command(l.ServerNS, udpstpBin, "server", "-p", strconv.Itoa(labPort), l.ServerAddr.String()), true).stopAtCleanup(t, "server")

	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf("tolerance = \"10m\"\n[crosstraffic]\nthreshold_mbps = 10\n\n"+
		"[[test]]\nname = \"down\"\nservers = [%q]\ndirection = \"down\"\nevery = \"2s\"\noptions = { test-time = 5, rate-index = \"5\" }\n", ours))
	inner := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	a := &agentProc{base: "http://" + forwardIntoNS(t, l, l.ClientNS, inner), store: "sqlite:" + filepath.Join(dir, "results.db")}
	runAgent(t, a, l.Command(l.ClientNS, udpstpBin, "agent", "--http", inner, "--store", a.store,
		"--identity", "probe-lab", "--test-min-every", "1s", "--config", config))
	a.stopAtCleanup(t, "agent")

	// A first result: the agent measures (a result without CrossMbps
	// would make every later check moot).
	waitUntil(t, 120*time.Second, "a first result", func() (bool, string) {
		return len(a.results(t, store.Filter{Limit: 1})) == 1, a.log()
	})
	if r := a.results(t, store.Filter{Limit: 1})[0]; r.CrossMbps == nil {
		t.Fatalf("a result without the cross-traffic figure: %+v\n%s", r, a.log())
	}

	flowStart := time.Now()
	stopFlow := secondFlow(t, l)
	// A test that began after the flow and was stored while it still
	// flowed ran wholly beside it.
	var busy store.Result
	waitUntil(t, 110*time.Second, "a test wholly during the second flow", func() (bool, string) {
		for _, r := range a.results(t, store.Filter{Since: flowStart}) {
			if r.Status != store.StatusMissed {
				busy = r
				return true, ""
			}
		}
		return false, a.log()
	})
	stopFlow()
	flowStop := time.Now()
	if busy.CrossMbps == nil || !busy.CrossBusy || *busy.CrossMbps <= 10 {
		t.Errorf("the test during the second flow is not marked: cross %v Mbit/s, busy %v\n%s", fv(busy.CrossMbps), busy.CrossBusy, a.log())
	}

	// The second test begun after the flow stopped (the first might have
	// read the counters as the flow's last datagrams went).
	var quiet []store.Result
	waitUntil(t, 120*time.Second, "two tests after the second flow", func() (bool, string) {
		quiet = a.results(t, store.Filter{Since: flowStop, Status: store.StatusOK})
		return len(quiet) >= 2, a.log()
	})
	q := quiet[len(quiet)-2] // newest first: the second after the stop
	if q.CrossMbps == nil || q.CrossBusy {
		t.Errorf("a test without other traffic: cross %v Mbit/s, busy %v\n%s", fv(q.CrossMbps), q.CrossBusy, a.log())
	}
	t.Logf("cross-traffic: %.1f Mbit/s during the flow (busy), %.1f after", fv(busy.CrossMbps), fv(q.CrossMbps))

	// defer_when_busy: with the line loaded again, a slot looks at it,
	// waits and looks again twice, and is missed, saying why.
	writeAgentFile(t, config, fmt.Sprintf("tolerance = \"10m\"\n[crosstraffic]\nthreshold_mbps = 10\nwindow = \"200ms\"\n"+
		"defer_when_busy = true\ndefer_delay = \"1s\"\nmax_deferrals = 2\n\n"+
		"[[test]]\nname = \"down\"\nservers = [%q]\ndirection = \"down\"\nevery = \"2s\"\noptions = { test-time = 5, rate-index = \"5\" }\n", ours))
	reloads := strings.Count(a.log(), "configuration reloaded")
	a.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the configuration with defer_when_busy", func() (bool, string) {
		return strings.Count(a.log(), "configuration reloaded") > reloads, a.log()
	})
	flow2 := time.Now()
	stopFlow = secondFlow(t, l)
	var missed store.Result
	waitUntil(t, 110*time.Second, "a slot missed on a busy line", func() (bool, string) {
		for _, r := range a.results(t, store.Filter{Since: flow2, Status: store.StatusMissed}) {
			missed = r
			return true, ""
		}
		return false, a.log()
	})
	stopFlow()
	if !strings.Contains(missed.Warning, "the line was busy") || !strings.Contains(missed.Warning, "2 deferral(s)") {
		t.Errorf("the slot missed on a busy line says %q", missed.Warning)
	}
	if !strings.Contains(a.log(), "slot deferred: the line is busy") {
		t.Errorf("no deferral logged:\n%s", a.log())
	}
}

// secondFlow loads the client namespace's interface with a UDP flow of
// about 96 Mbit/s (10 datagrams of 1200 bytes a millisecond) to a sink in
// the server namespace that never reads (its full buffer drops them), for
// at most 120 s and 1.2 million datagrams; the returned func stops it.
func secondFlow(t *testing.T, l *netlab.Lab) func() {
	t.Helper()
	sinkAddr := netip.AddrPortFrom(l.ServerAddr, labPort+5)
	sink, err := l.ListenUDP(l.ServerNS, sinkAddr)
	if err != nil {
		t.Fatal(err)
	}
	src, err := l.ListenUDP(l.ClientNS, netip.AddrPortFrom(l.ClientAddr, 0))
	if err != nil {
		sink.Close()
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		const per, maxTicks = 10, 120_000
		buf := make([]byte, 1200)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for range maxTicks {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for range per {
				if _, err := src.WriteToUDPAddrPort(buf, sinkAddr); err != nil {
					t.Errorf("the second flow: %v", err)
					return
				}
			}
		}
	})
	stopFlow := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
		src.Close()
		sink.Close()
	})
	t.Cleanup(stopFlow)
	return stopFlow
}

func fv(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}
