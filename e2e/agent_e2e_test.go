//go:build !small

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// agentProc is an agent process under test.
type agentProc struct {
	*proc
	base  string // http://127.0.0.1:port
	store string // its --store
}

// startAgent runs `udpstp agent` with a test's store and listener, and a
// least mean spacing of 1 s, and waits until /healthz answers.
func startAgent(t *testing.T, dir, config string, extra ...string) *agentProc {
	t.Helper()
	a := &agentProc{base: fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t)), store: "sqlite:" + filepath.Join(dir, "results.db")}
	args := []string{"agent", "--http", strings.TrimPrefix(a.base, "http://"), "--store", a.store,
		"--identity", "probe-e2e", "--test-min-every", "1s"}
	if config != "" {
		args = append(args, "--config", config)
	}
	return runAgent(t, a, exec.Command(udpstpBin, append(args, extra...)...))
}

// runAgent starts cmd (an agent with a's --store) and waits until its
// /healthz answers at a.base (its listener, or a way into its network
// namespace).
func runAgent(t *testing.T, a *agentProc, cmd *exec.Cmd) *agentProc {
	t.Helper()
	a.proc = start(t, cmd, agentOpts(a.base))
	return a
}

// agentOpts watch an agent serving at base (http://addr:port): its
// output is its log, and it is ready once its /healthz answers 200.
func agentOpts(base string) procOpts {
	return procOpts{name: "udpstp agent", merge: true, readyWithin: 60 * time.Second, readyCond: func() (bool, string) {
		code, _, err := httpGet(base + "/healthz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("GET %s/healthz: %d %v", base, code, err)
	}}
}

// results reads the agent's store, as `udpstp history` does while the
// agent runs.
func (a *agentProc) results(t *testing.T, f store.Filter) []store.Result {
	t.Helper()
	st, err := store.Open(context.Background(), a.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.List(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAgentE2EPrometheus runs the agent with three tests on a fast schedule against
// our server, the first test's first server dead (failover), and checks
// the store, /metrics (promtool), a reload with a bad file and a good one,
// and /probe scraped by a real Prometheus.
func TestAgentE2EPrometheus(t *testing.T) {
	processTest(t)
	for _, tool := range []string{"promtool", "prometheus"} {
		if _, err := exec.LookPath(tool); err != nil && os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (apt-get install prometheus; .ci/run does): %v", tool, err)
		}
	}
	promtool := lookTool(t, "promtool")
	promBin := lookTool(t, "prometheus")
	port := freePort(t, "127.0.0.1")
	// -I 20: /probe's tests search for the rate; the server holds them
	// to 20 Mbit/s, as fastConfig's tests are.
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "-I", "20", "127.0.0.1")
	dead := freePort(t, "127.0.0.1") // nothing listens: ICMP port unreachable
	live := fmt.Sprintf("127.0.0.1:%d", port)
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fastConfig(
		fastTest{"down", "down", []string{fmt.Sprintf("127.0.0.1:%d", dead), live}},
		fastTest{"up", "up", []string{live}},
		fastTest{"bidi", "bidirectional", []string{live}}))
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")

	for _, name := range []string{"down", "up", "bidi"} {
		waitUntil(t, 180*time.Second, "a result of "+name, func() (bool, string) {
			return len(a.results(t, store.Filter{Test: name, Limit: 1})) > 0, a.log()
		})
	}
	rows := a.results(t, store.Filter{})
	ids := map[string]bool{}
	for _, r := range rows {
		if !resultIDRe.MatchString(r.ID) || ids[r.ID] {
			t.Errorf("result ID %q: not a version 4 UUID, or twice", r.ID)
		}
		ids[r.ID] = true
		if r.Agent != "probe-e2e" || r.Origin != store.OriginClient {
			t.Errorf("agent %q origin %q", r.Agent, r.Origin)
		}
		if r.Status == store.StatusMissed {
			t.Errorf("missed (tolerance 10 min, server up): %+v", r)
			continue
		}
		if r.Server != live || r.Status != store.StatusOK || r.MaxMbps == nil || *r.MaxMbps <= 0 || r.RTTMinMs == nil {
			t.Errorf("%s: %+v", r.Test, r)
		}
		switch r.Test {
		case "down":
			if r.Direction != "down" || !strings.Contains(r.Warning, fmt.Sprintf("failover: 127.0.0.1:%d", dead)) {
				t.Errorf("down (after failover): direction %q warning %q", r.Direction, r.Warning)
			}
		case "up":
			if r.Direction != "up" {
				t.Errorf("up: direction %q", r.Direction)
			}
		case "bidi":
			if r.Direction != "bidirectional" || r.LoadedMs == nil || r.RPM == nil || r.Grade == "" {
				t.Errorf("bidi: direction %q loaded %v rpm %v grade %q", r.Direction, r.LoadedMs, r.RPM, r.Grade)
			}
		}
	}
	st, err := store.Open(context.Background(), a.store)
	if err != nil {
		t.Fatal(err)
	}
	if full, err := st.Get(context.Background(), rows[0].ID); err != nil || !strings.Contains(string(full.Doc), `"ErrorStatus"`) {
		t.Errorf("the stored document: %v %.200s", err, full.Doc)
	}
	st.Close()

	code, body, err := httpGet(a.base + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	promtoolCheck(t, promtool, "/metrics", body)
	for _, want := range []string{
		fmt.Sprintf(`udpstp_agent_capacity_bytes_per_second{direction="down",result="max",server=%q,test="down"}`, live),
		fmt.Sprintf(`udpstp_agent_capacity_bytes_per_second{direction="up",result="summary",server=%q,test="up"}`, live),
		fmt.Sprintf(`udpstp_agent_latency_under_load_seconds{direction="bidirectional",server=%q,test="bidi"}`, live),
		fmt.Sprintf(`udpstp_agent_responsiveness_rpm{direction="bidirectional",server=%q,test="bidi"}`, live),
		`udpstp_agent_tests_total{status="ok",test="down"}`,
		`udpstp_agent_test_duration_seconds_count{test="up"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	// The page (package web) is mounted at /, over the same store.
	code, body, err = httpGet(a.base + "/")
	if err != nil || code != http.StatusOK || !strings.Contains(string(body), "bidi") {
		t.Errorf("the page: %d %v %.300s", code, err, body)
	}

	// A bad file on reload: logged, the configuration in force stays.
	writeAgentFile(t, config, "[[test]]\nname = \"x\"\nservers = [\"s\"]\ndirection = \"down\"\nevery = \"often\"\n")
	a.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the bad file refused", func() (bool, string) {
		return strings.Contains(a.log(), "reload refused") && strings.Contains(a.log(), "agent.toml:5: test[1].every"), a.log()
	})
	if _, body, _ := httpGet(a.base + "/metrics"); !strings.Contains(string(body), "udpstp_agent_config_last_reload_successful 0") {
		t.Error("a refused reload is not in udpstp_agent_config_last_reload_successful")
	}
	// A good one without tests: the schedules stop, /probe stays.
	writeAgentFile(t, config, "[probe]\nmin_interval = \"1s\"\ntargets = [\""+live+"\"]\n")
	a.signal(t, syscall.SIGHUP)
	waitUntil(t, 30*time.Second, "the good file reloaded", func() (bool, string) {
		return strings.Contains(a.log(), "configuration reloaded"), a.log()
	})
	if !a.running() {
		t.Fatal("the agent ended on SIGHUP")
	}

	// /probe, as a Prometheus job with parameters drives it.
	code, body, _ = httpGet(a.base + "/probe?target=" + live + "&duration=99999")
	if code != http.StatusBadRequest {
		t.Errorf("/probe with a duration over the limit: %d %s", code, body)
	}
	scrapeProbe(t, promBin, a, live)
}

// scrapeProbe has a real Prometheus scrape a's /probe with target, and
// checks the figures it scraped and the probe's result in a's store.
func scrapeProbe(t *testing.T, promBin string, a *agentProc, target string) {
	t.Helper()
	prom := startProbePrometheus(t, promBin, strings.TrimPrefix(a.base, "http://"), target)
	waitUntil(t, 120*time.Second, "Prometheus scraped a probe", func() (bool, string) {
		v, ok, detail := prom.query(`udpstp_probe_capacity_bytes_per_second{job="udpstp-probe",result="max"}`)
		return ok && v > 0, detail + "\n" + a.log()
	})
	if v, ok, detail := prom.query(`udpstp_probe_success{job="udpstp-probe"}`); !ok || v != 1 {
		t.Errorf("udpstp_probe_success: %v %v %s", v, ok, detail)
	}
	probes := a.results(t, store.Filter{Test: "probe"})
	if len(probes) == 0 || probes[0].Server != target || probes[0].Direction != "down" || probes[0].Status != store.StatusOK {
		t.Errorf("the probe's results in the store: %+v", probes)
	}
}

// startProbePrometheus runs Prometheus with one job scraping the agent's
// /probe with target and duration as parameters.
func startProbePrometheus(t *testing.T, bin, agentAddr, target string) *prometheus {
	t.Helper()
	return runPrometheus(t, bin, fmt.Sprintf(`global:
  scrape_interval: 15s
  scrape_timeout: 14s
scrape_configs:
  - job_name: udpstp-probe
    metrics_path: /probe
    params:
      target: [%q]
      direction: [down]
      duration: ["5"]
    static_configs:
      - targets: [%q]
`, target, agentAddr))
}

// fastTest is one [[test]] of fastConfig.
type fastTest struct {
	name, direction string
	servers         []string
}

// fastConfig is an agent's file with tests on a fast schedule (every 2 s,
// 5 s tests at a fixed 20 Mbit/s: the agent is under test, not the rate),
// a slot tolerated 10 min late (a busy machine), and /probe's tests 1 s
// apart at least.
func fastConfig(tests ...fastTest) string {
	var b strings.Builder
	b.WriteString("tolerance = \"10m\"\n[probe]\nmin_interval = \"1s\"\nmax_duration = \"10s\"\n")
	for _, t := range tests {
		q := make([]string, len(t.servers))
		for i, s := range t.servers {
			q[i] = strconv.Quote(s)
		}
		fmt.Fprintf(&b, "\n[[test]]\nname = %q\nservers = [%s]\ndirection = %q\nevery = \"2s\"\noptions = { test-time = 5, rate-index = \"20\" }\n",
			t.name, strings.Join(q, ", "), t.direction)
	}
	return b.String()
}

func writeAgentFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resultIDRe is a stored result's ID as the agent makes it: a version 4
// UUID (RFC 9562, section 5.4) in lower-case hex.
var resultIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

var storedRe = regexp.MustCompile(`msg="result stored" id=([0-9a-f-]{36})`)
