//go:build !small

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// idleWindow is how long BenchmarkAgentIdle counts the agent's wake-ups.
const idleWindow = 30 * time.Second

// benchAgents is how many agents each half of BenchmarkAgentIdle runs at
// once: its figures are their medians.
const benchAgents = 3

// benchTests is how many tests the agents of BenchmarkAgentIdle's second
// half run before they are measured idle again.
const benchTests = 100

// BenchmarkAgentIdle measures idle agents (the store and the page on)
// (docs/agent.md, "Memory"; goals: VmRSS under 25 MB, at most one
// wake-up a second), the medians of three run at once:
//
//   - idle: no tests configured; resident memory after the page and
//     /metrics were served once, and wake-ups per second (the context
//     switches of all its threads over 30 s);
//   - after-100-tests: each ran 100 five-second tests against one local
//     server (a test every second, --test-min-every), then its tests were
//     reloaded away (SIGHUP) and its memory read once the last one ended.
//
// One run is three agents (b.N is not used: the figures are of
// processes, not of an operation).
func BenchmarkAgentIdle(b *testing.B) {
	b.Run("idle", benchAgentIdle)
	b.Run("after-100-tests", benchAgentAfterTests)
}

func benchAgentIdle(b *testing.B) {
	agents := make([]*benchAgent, benchAgents)
	for i := range agents {
		agents[i] = startBenchAgent(b, "")
		agents[i].warm(b)
	}
	time.Sleep(5 * time.Second) // settles: start-up's goroutines end
	b.ResetTimer()
	wake := make([]float64, len(agents))
	before := make([]int64, len(agents))
	for i, a := range agents {
		before[i] = contextSwitches(b, a.pid())
	}
	time.Sleep(idleWindow)
	for i, a := range agents {
		wake[i] = float64(contextSwitches(b, a.pid())-before[i]) / idleWindow.Seconds()
	}
	b.StopTimer()
	b.ReportMetric(median(wake), "wakeups/s")
	reportMemory(b, agents)
}

func benchAgentAfterTests(b *testing.B) {
	port := freePort(b, "127.0.0.1")
	// -I 20: the tests search for a rate; the server holds them to 20
	// Mbit/s, light beside three agents' runs on a busy machine.
	srv := start(b, exec.Command(benchBin(), "server", "-p", strconv.Itoa(port), "-I", "20", "127.0.0.1"), ourServerOpts())
	srv.stopAtCleanup(b, "udpstp server")
	agents := make([]*benchAgent, benchAgents)
	for i := range agents {
		dir := b.TempDir()
		config := filepath.Join(dir, "agent.toml")
		if err := os.WriteFile(config, []byte(benchConfig(port)), 0o644); err != nil {
			b.Fatal(err)
		}
		agents[i] = startBenchAgent(b, config)
		agents[i].warm(b)
	}
	b.ResetTimer()
	for _, a := range agents {
		// About 6 s a test: 100 in some 10 minutes; an hour is a stuck
		// agent.
		if !a.p.waitFor(time.Hour, func() bool { return a.tests() >= benchTests }) {
			b.Fatalf("%d tests not run within an hour (%s):\n%s", benchTests, a.p.state(), a.p.log())
		}
	}
	for _, a := range agents {
		if err := os.WriteFile(a.config, []byte(benchConfig(0)), 0o644); err != nil {
			b.Fatal(err)
		}
		a.p.signal(b, syscall.SIGHUP)
	}
	for _, a := range agents {
		if !a.p.waitFor(time.Minute, func() bool { return a.p.line(`msg="configuration reloaded" tests=0`) != "" }) {
			b.Fatalf("no reload to no tests (%s):\n%s", a.p.state(), a.p.log())
		}
		a.waitNoTest(b)
		a.warm(b)
	}
	time.Sleep(5 * time.Second) // settles, as idle's
	b.StopTimer()
	reportMemory(b, agents)
}

// benchBin is the binary BenchmarkAgentIdle measures: UDPSTP_BIN, the
// release build `make bench` makes (CGO_ENABLED=0, -trimpath), else the
// suite's, which go test builds with cgo where it can: linked with the C
// library, a process has more memory of its own and libc's pages beside.
func benchBin() string {
	if p := os.Getenv("UDPSTP_BIN"); p != "" {
		return p
	}
	return udpstpBin
}

// benchConfig is an agent's file for BenchmarkAgentIdle: one downstream
// test of our server at port every second; port 0: no test.
func benchConfig(port int) string {
	s := "[probe]\nmin_interval = \"1s\"\n"
	if port != 0 {
		s += fmt.Sprintf("\n[[test]]\nname = \"bench\"\nservers = [\"127.0.0.1:%d\"]\ndirection = \"down\"\n"+
			"every = \"1s\"\noptions = { test-time = 5, rate-index = \"20\" }\n", port)
	}
	return s
}

// benchAgent is one agent of BenchmarkAgentIdle.
type benchAgent struct {
	p      *proc
	base   string // http://127.0.0.1:port
	config string // its --config, or ""
}

// startBenchAgent starts an agent with its own store (and config, if
// not ""), stopped at the benchmark's end.
func startBenchAgent(b *testing.B, config string) *benchAgent {
	b.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(b))
	args := []string{"agent", "--http", addr, "--store", "sqlite:" + filepath.Join(b.TempDir(), "results.db"), "--identity", "bench"}
	if config != "" {
		args = append(args, "--config", config, "--test-min-every", "1s")
	}
	o := agentOpts("http://" + addr)
	o.stop = os.Interrupt
	return &benchAgent{p: start(b, exec.Command(benchBin(), args...), o), base: "http://" + addr, config: config}
}

func (a *benchAgent) pid() int { return a.p.cmd.Process.Pid }

// warm has the agent serve its page and /metrics once, as a user and a
// scraper would.
func (a *benchAgent) warm(b *testing.B) {
	b.Helper()
	for _, p := range []string{"/", "/metrics"} {
		if code, _, err := httpGet(a.base + p); err != nil || code != http.StatusOK {
			b.Fatalf("GET %s%s: %d %v", a.base, p, code, err)
		}
	}
}

// tests counts the tests the agent ran and stored (a missed slot's
// result is not one).
func (a *benchAgent) tests() int {
	n := 0
	for _, l := range strings.Split(a.p.log(), "\n") {
		if strings.Contains(l, `msg="result stored"`) && !strings.Contains(l, "status=missed") {
			n++
		}
	}
	return n
}

// waitNoTest polls the agent's /metrics until no test runs (the one in
// progress at the reload ends and is stored).
func (a *benchAgent) waitNoTest(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, body, err := httpGet(a.base + "/metrics")
		if err == nil && strings.Contains(string(body), "\nudpstp_agent_test_running 0\n") {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("a test still runs after 2 minutes (%v):\n%s", err, body)
		}
		time.Sleep(200 * time.Millisecond) // the poll's period
	}
}

// reportMemory reports the medians of the agents' VmRSS and its two
// parts: RssAnon, the process's own memory (the Go heap, stacks, the
// runtime's and SQLite's), and RssFile, the pages of the binary it
// touched (shared, in the page cache, reclaimable).
func reportMemory(b *testing.B, agents []*benchAgent) {
	b.Helper()
	for _, f := range []struct{ field, unit string }{{"VmRSS", "RSS-MB"}, {"RssAnon", "anon-MB"}, {"RssFile", "file-MB"}} {
		v := make([]float64, len(agents))
		for i, a := range agents {
			kb, err := statusField(fmt.Sprintf("/proc/%d/status", a.pid()), f.field)
			if err != nil {
				b.Fatal(err)
			}
			v[i] = float64(kb) / 1024
		}
		b.ReportMetric(median(v), f.unit)
	}
	b.ReportMetric(0, "ns/op")
}

// median is the middle of v (of an even count, the mean of the two).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of process pid (a thread that ended meanwhile takes its
// count with it: the figure errs low by the few a short thread made).
func contextSwitches(b *testing.B, pid int) int64 {
	b.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("the agent's threads: %v", err)
	}
	var n int64
	for _, t := range tasks {
		v, err1 := statusField(t, "voluntary_ctxt_switches")
		nv, err2 := statusField(t, "nonvoluntary_ctxt_switches")
		if err1 == nil && err2 == nil { // else the thread has ended
			n += v + nv
		}
	}
	return n
}

// statusField reads field (a number, kB for sizes) from a /proc status
// file.
func statusField(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}
