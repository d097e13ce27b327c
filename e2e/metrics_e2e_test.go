package e2e

// The metrics endpoint and the client's textfile against the real tools:
// Debian's prometheus scrapes a real server across real tests and is
// asked over its HTTP API what it saw; promtool checks what the endpoint
// serves and what the client writes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// lookTool finds one of Debian's prometheus package's programs, or skips
// the test saying how to get it (.ci/run installs it).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found (apt-get install prometheus; .ci/run does): %v", name, err)
	}
	return p
}

// httpGet fetches url with a bounded wait.
func httpGet(url string, header ...string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// promtoolCheck pipes b into `promtool check metrics` and fails the test
// on any complaint; it returns what promtool said (nothing when clean).
func promtoolCheck(t *testing.T, promtool, what string, b []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s", what, err, out)
	}
	return string(out)
}

// prometheus is a Prometheus server under test.
type prometheus struct {
	base string // http://127.0.0.1:port
	proc *proc  // its log lines
}

// startPrometheus runs Debian's prometheus with a temporary configuration
// and storage, scraping target every second, and waits until it is ready.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	conf := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: udpstp
    static_configs:
      - targets: [%q]
`, target)
	return runPrometheus(t, bin, conf)
}

// runPrometheus runs Debian's prometheus with configuration conf and a
// temporary storage, and waits until it is ready.
func runPrometheus(t *testing.T, bin, conf string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{base: fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t))}
	p.proc = startWatched(t, exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(p.base, "http://"), "--log.level=warn"))
	p.proc.stopAtCleanup(t, "prometheus")
	waitUntil(t, 60*time.Second, "prometheus ready", func() (bool, string) {
		code, body, err := httpGet(p.base + "/-/ready")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %s %v; log:\n%s", code, body, err, p.proc.log())
	})
	return p
}

// query asks Prometheus for an instant vector and returns its single
// value; ok is false when the result is not exactly one sample.
func (p *prometheus) query(q string) (v float64, ok bool, detail string) {
	code, body, err := httpGet(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil || code != http.StatusOK {
		return 0, false, fmt.Sprintf("%d %s %v", code, body, err)
	}
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, false, string(body)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, string(body)
}

// waitUntil polls cond until it holds or timeout passes, then fails with
// cond's last detail.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, timeout, detail)
		}
		time.Sleep(200 * time.Millisecond) // the poll's period
	}
}

// TestPrometheusScrapesServer: a real Prometheus scrapes a real server
// every second across a downstream and an upstream test and a refused
// Setup Request; over its query API, the ended-test counter went up by one
// per direction (two in all) and the refusals by code 9 by one. The
// endpoint's text format passes promtool check metrics (which reads only
// that format); the OpenMetrics that Prometheus itself asks for is what it
// scraped the figures from.
func TestPrometheusScrapesServer(t *testing.T) {
	e2e(t)
	promBin := lookTool(t, "prometheus")
	promtool := lookTool(t, "promtool")
	port := freePort(t, "127.0.0.1")
	maddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	// The endpoint is bound before the server says it started; a scrape
	// that comes before it serves waits in the listen queue.
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "-B", "2000", "--metrics-listen", maddr, "127.0.0.1")
	prom := startPrometheus(t, promBin, maddr)

	// The baseline, as Prometheus scraped it before any test.
	// Ended by any reason: a loaded machine may make a test end otherwise
	// than by its stop handshake (the reason label tells), but each Data
	// Phase ends once.
	const (
		ended   = `sum(udpstp_tests_ended_total)`
		down    = `sum(udpstp_tests_ended_total{direction="downstream"})`
		up      = `sum(udpstp_tests_ended_total{direction="upstream"})`
		refused = `udpstp_setup_rejected_total{code="9"}`
	)
	base := map[string]float64{}
	waitUntil(t, 30*time.Second, "first scrape", func() (bool, string) {
		detail := ""
		for _, q := range []string{`up{job="udpstp"}`, ended, down, up, refused} {
			v, ok, d := prom.query(q)
			if !ok || q == `up{job="udpstp"}` && v != 1 {
				return false, q + ": " + d + "\n" + prom.proc.log()
			}
			base[q] = v
			detail += d
		}
		return true, detail
	})
	if base[ended] != 0 || base[refused] != 0 {
		t.Fatalf("baseline before any test: %v", base)
	}

	for _, dir := range []string{"-d", "-u"} {
		r, code, out := ourClient(t, dir, "-t", "5", "-B", "500", "-p", fmt.Sprint(port), "127.0.0.1")
		checkResults(t, r, code, out)
	}
	// Without -B against a server that has one: code 9, refused.
	if _, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1"); code != 109 {
		t.Fatalf("refused test: status %d, want 109\n%s", code, out)
	}

	for q, inc := range map[string]float64{ended: 2, down: 1, up: 1, refused: 1} {
		waitUntil(t, 30*time.Second, q+" went up by "+fmt.Sprint(inc), func() (bool, string) {
			v, ok, d := prom.query(q)
			return ok && v == base[q]+inc, d
		})
	}
	if v, ok, d := prom.query(`udpstp_setup_accepted_total`); !ok || v != 2 {
		t.Errorf("accepted Setup Requests: %s", d)
	}
	for _, q := range []string{`sum(udpstp_status_received_total)`, `sum(udpstp_status_sent_total)`, `sum(udpstp_tx_ip_bytes_total)`,
		`sum(udpstp_rx_ip_bytes_total)`, `sum(udpstp_socket_sent_datagrams_total)`, `udpstp_engine_wakeups_total`} {
		if v, ok, d := prom.query(q); !ok || v <= 0 {
			t.Errorf("%s after two tests: %s", q, d)
		}
	}

	// The text format is what promtool accepts; OpenMetrics, which
	// Prometheus asks for, ends as its specification says.
	code, body, err := httpGet("http://" + maddr + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("scrape: %d %v", code, err)
	}
	t.Logf("promtool check metrics on the endpoint (%d bytes): %q", len(body), promtoolCheck(t, promtool, "the endpoint", body))
	code, body, err = httpGet("http://"+maddr+"/metrics", "Accept", "application/openmetrics-text;version=1.0.0")
	if err != nil || code != http.StatusOK || !bytes.HasSuffix(body, []byte("# EOF\n")) {
		t.Fatalf("OpenMetrics scrape: %d %v, ends %q", code, err, body[max(0, len(body)-20):])
	}
}

// checkResults asserts a test that produced results: a status below 50
// (a warning such as "traffic stopped" on a loaded machine still has
// them) and a maximum.
func checkResults(t *testing.T, r testResult, code int, out string) {
	t.Helper()
	if code > 49 || r.Output.AtMax.MaxIPLayerCapacity <= 0 {
		t.Fatalf("test produced no results: status %d %q\n%s", code, r.ErrorMessage, out)
	}
}

// TestTextfileLoopback: a real loopback test with --textfile writes a
// file promtool accepts whose figures are the JSON result's; a refused
// test writes one too, saying it failed; a name without .prom is refused
// before any test.
func TestTextfileLoopback(t *testing.T) {
	e2e(t)
	promtool := lookTool(t, "promtool")
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "-B", "2000", "127.0.0.1")
	dir := t.TempDir()
	tf, jf := filepath.Join(dir, "udpstp.prom"), filepath.Join(dir, "result.json")
	r, code, out := ourClient(t, "-d", "-t", "5", "-B", "500", "-p", fmt.Sprint(port), "--output", jf, "--textfile", tf, "127.0.0.1")
	checkResults(t, r, code, out)
	text, err := os.ReadFile(tf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("promtool check metrics on the textfile: %q", promtoolCheck(t, promtool, "the textfile", text))
	doc, err := os.ReadFile(jf)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ErrorStatus int
		Output      struct {
			Summary map[string]any
			AtMax   map[string]any
		}
	}
	if err := json.Unmarshal(doc, &j); err != nil {
		t.Fatal(err)
	}
	got := textfileSeries(t, text)
	server := "127.0.0.1"
	if port != 24601 {
		server = fmt.Sprintf("127.0.0.1:%d", port)
	}
	// key is a series' name with the labels of every series and more, as
	// textfileSeries spells it.
	key := func(name, more string) string {
		ls := []string{`direction="downstream"`, fmt.Sprintf("server=%q", server)}
		if more != "" {
			ls = append(ls, strings.Split(more, ",")...)
		}
		sort.Strings(ls)
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	num := func(m map[string]any, k string) float64 {
		v, ok := m[k].(float64)
		if !ok {
			t.Fatalf("JSON has no %s", k)
		}
		return v
	}
	for k, want := range map[string]float64{
		key("udpstp_test_success", ``):                                                   b2f(j.ErrorStatus == 0),
		key("udpstp_test_error_status", ``):                                              float64(j.ErrorStatus),
		key("udpstp_test_capacity_bytes_per_second", `layer="L3/IP",result="max"`):       num(j.Output.AtMax, "MaxIPLayerCapacity") * 125000,
		key("udpstp_test_capacity_bytes_per_second", `layer="L2/Eth",result="max"`):      num(j.Output.AtMax, "MaxETHCapacityNoFCS") * 125000,
		key("udpstp_test_capacity_bytes_per_second", `layer="L1/Eth",result="max"`):      num(j.Output.AtMax, "MaxETHCapacityWithFCS") * 125000,
		key("udpstp_test_capacity_bytes_per_second", `layer="L1/Eth+VLAN",result="max"`): num(j.Output.AtMax, "MaxETHCapacityWithFCSVLAN") * 125000,
		key("udpstp_test_capacity_bytes_per_second", `layer="L3/IP",result="summary"`):   num(j.Output.Summary, "IPLayerCapacitySummary") * 125000,
		key("udpstp_test_loss_ratio", `result="summary"`):                                num(j.Output.Summary, "LossRatioSummary"),
		key("udpstp_test_delivered_ratio", `result="max"`):                               num(j.Output.AtMax, "DeliveredPercent") / 100,
		key("udpstp_test_rtt_variation_seconds", `result="summary",stat="max"`):          num(j.Output.Summary, "RTTMax"),
		key("udpstp_test_pdv_seconds", `result="max",stat="avg"`):                        num(j.Output.AtMax, "PDVAvg"),
		key("udpstp_test_min_rtt_seconds", `result="summary"`):                           num(j.Output.Summary, "MinRTTSummary"),
	} {
		if g, ok := got[k]; !ok || g != want {
			t.Errorf("%s = %v (present %v), want %v (the JSON's)\n%s", k, g, ok, want, text)
		}
	}
	if got[key("udpstp_test_capacity_bytes_per_second", `layer="L3/IP",result="max"`)] <= 0 {
		t.Error("no capacity in the textfile")
	}

	// A refused test (no -B for a server with -B) still leaves its file.
	tf2 := filepath.Join(dir, "refused.prom")
	if _, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "--textfile", tf2, "127.0.0.1"); code != 109 {
		t.Fatalf("refused test: status %d, want 109\n%s", code, out)
	}
	text2, err := os.ReadFile(tf2)
	if err != nil {
		t.Fatalf("refused test wrote no textfile: %v", err)
	}
	promtoolCheck(t, promtool, "the refused test's textfile", text2)
	got2 := textfileSeries(t, text2)
	if got2[key("udpstp_test_success", ``)] != 0 || got2[key("udpstp_test_error_status", ``)] != 109 {
		t.Errorf("refused test's textfile:\n%s", text2)
	}

	// Not .prom: one line, exit 50, and no test run (no Setup Request
	// reaches the server, so the client returns at once).
	cmd := exec.Command(udpstpBin, "client", "-d", "-p", fmt.Sprint(port), "--textfile", filepath.Join(dir, "r.txt"), "127.0.0.1")
	run := runCmd(cmd, await.Deadline)
	if out2 := run.stdout + run.stderr; run.err != nil || run.code != exitConfig ||
		strings.Count(strings.TrimSpace(out2), "\n") != 0 || !strings.Contains(out2, ".prom") {
		t.Errorf("--textfile r.txt: exit %d %v\n%s", run.code, run.err, out2)
	}
}

// textfileSeries parses a textfile as node_exporter does and flattens it
// to name{labels} -> value, the labels sorted.
func textfileSeries(t *testing.T, b []byte) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("textfile does not parse: %v\n%s", err, b)
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			out[name+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
