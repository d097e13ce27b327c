//go:build linux && !small

package e2e

// The agent left alone (docs/agent.md): a stop during "Run now" keeps the
// result, a kill is recorded at the next start, the store's password stays
// out of the log, a --store it cannot use is refused at once, a server down
// is an error (not a missed slot), and a store that refuses writes turns
// /healthz red until the result is delivered.

import (
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// runNow presses the page's "Run now" of test name, as a browser would.
func runNow(t *testing.T, a *agentProc, name string) {
	t.Helper()
	postRun(t, a, pageToken(t, a), name)
}

// pageToken is the page's form token.
func pageToken(t *testing.T, a *agentProc) string {
	t.Helper()
	code, page, err := httpGet(a.base + "/")
	m := csrfRe.FindSubmatch(page)
	if err != nil || code != http.StatusOK || m == nil {
		t.Fatalf("GET /: %d %v (no token)", code, err)
	}
	return string(m[1])
}

// postRun posts the form as the page's script does (Accept: text/plain:
// 202, no redirect to the page).
func postRun(t *testing.T, a *agentProc, token, name string) {
	t.Helper()
	form := url.Values{"test": {name}, "csrf": {token}}.Encode()
	req, err := http.NewRequest(http.MethodPost, a.base+"/run", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /run %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /run %s: %d %.200s", name, resp.StatusCode, b)
	}
}

// yearlyTest is a test of an agent's file that runs only when asked
// (its cron slot is on 1 January).
func yearlyTest(name, server, options string) string {
	return fmt.Sprintf("\n[[test]]\nname = %q\nservers = [%q]\ndirection = \"down\"\ncron = \"0 0 1 1 *\"\n%s\n", name, server, options)
}

// TestAgentRunNowStopE2E: SIGTERM during a "Run now" test stores its
// result (it was lost: shutdown did not wait for it); SIGKILL during one
// loses it, and the next start stores an error saying "interrupted".
func TestAgentRunNowStopE2E(t *testing.T) {
	processTest(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "127.0.0.1")
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, yearlyTest("slow", fmt.Sprintf("127.0.0.1:%d", port), `options = { test-time = 20, rate-index = "20" }`))

	a := startAgent(t, dir, config)
	runNow(t, a, "slow")
	a.waitLine(t, `schedule="run now"`, 30*time.Second)
	if code := a.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d after SIGTERM:\n%s", code, a.log())
	}
	if rows := a.results(t, store.Filter{Test: "slow"}); len(rows) != 1 {
		t.Fatalf("after SIGTERM during run now: %d results of slow, want 1:\n%s", len(rows), a.log())
	}
	if !strings.Contains(a.log(), `msg="result stored"`) {
		t.Errorf("the result was not logged as stored:\n%s", a.log())
	}

	b := startAgent(t, dir, config)
	runNow(t, b, "slow")
	b.waitLine(t, `schedule="run now"`, 30*time.Second)
	b.kill()
	c := startAgent(t, dir, config)
	c.waitLine(t, "test interrupted", 30*time.Second)
	rows := c.results(t, store.Filter{Test: "slow"})
	if len(rows) != 2 || rows[0].Status != store.StatusError || !strings.HasPrefix(rows[0].Warning, "interrupted:") {
		t.Fatalf("after SIGKILL during run now and a restart: want the SIGTERM's result and an interrupted error, have %+v\n%s", rows, c.log())
	}
	if code := c.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d", code)
	}
	if n := len(c.results(t, store.Filter{Test: "slow"})); n != 2 {
		t.Errorf("%d results after a second start: the interruption was stored twice", n)
	}
}

// TestAgentStoreSchemeE2E: a --store of no scheme the agent knows exits at
// once, naming it, and suggests sqlite: for a path (both were taken for a
// PostgreSQL URL).
func TestAgentStoreSchemeE2E(t *testing.T) {
	processTest(t)
	for spec, want := range map[string]string{
		"mysql://u:secret@db/x": `scheme "mysql:"`,
		"/var/lib/x.db":         "sqlite:/var/lib/x.db",
		"results.db":            "sqlite:results.db",
	} {
		code, _, stderr := runQuick(t, nil, udpstpBin, "agent", "--http", "127.0.0.1:0", "--store", spec,
			"--spool", filepath.Join(t.TempDir(), "spool.db"))
		if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "secret") {
			t.Errorf("--store %s: exit %d, want non-zero and %q:\n%s", spec, code, want, stderr)
		}
	}
}

// TestAgentStoreSecretE2E: an agent of a PostgreSQL that answers but has
// no such database says so at start, one of a PostgreSQL that is down says
// the spool keeps its results, and neither log holds the password, on any
// line.
func TestAgentStoreSecretE2E(t *testing.T) {
	processTest(t)
	c := pgtest.Start(t)
	dead := freeTCPPort(t)
	for spec, want := range map[string]string{
		fmt.Sprintf("postgres://postgres:secret@127.0.0.1:%d/nosuchdb?sslmode=disable", c.Port()): "remote store refuses",
		fmt.Sprintf("postgres://u:secret@127.0.0.1:%d/db?sslmode=disable", dead):                  "remote store unreachable",
	} {
		a := &agentProc{base: fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t)), store: spec}
		runAgent(t, a, exec.Command(udpstpBin, "agent", "--http", strings.TrimPrefix(a.base, "http://"), "--store", spec,
			"--spool", filepath.Join(t.TempDir(), "spool.db"), "--identity", "probe-pw"))
		a.waitLine(t, "agent serving", 10*time.Second)
		switch line := a.findLine(want, 60*time.Second); {
		case line == "":
			t.Errorf("never logged %q", want)
		case want == "remote store refuses" && !strings.Contains(line, "nosuchdb"):
			t.Errorf("the refusal does not say why: %s", line)
		}
		a.stop(t, syscall.SIGTERM)
		for _, l := range strings.Split(a.log(), "\n") {
			if strings.Contains(l, "secret") {
				t.Errorf("the password in the log: %s", l)
			}
		}
	}
}

// TestAgentServerDownE2E: a server that refuses (ICMP) and one that never
// answers give an error result with the reason, not "missed" (which is a
// slot the agent did not run), counted as errors in /metrics.
func TestAgentServerDownE2E(t *testing.T) {
	processTest(t)
	refused := freePort(t, "127.0.0.1")
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, yearlyTest("refused", fmt.Sprintf("127.0.0.1:%d", refused), "")+
		yearlyTest("silent", silent.LocalAddr().String(), ""))
	a := startAgent(t, dir, config)
	for _, name := range []string{"refused", "silent"} {
		runNow(t, a, name)
		a.waitLine(t, "test="+name+" server=", 120*time.Second) // "result stored"
		r := a.results(t, store.Filter{Test: name})[0]
		if r.Status != store.StatusError || r.ErrorStatus < 50 || !strings.Contains(r.Warning, "every server failed: 127.0.0.1:") {
			t.Errorf("%s: status %q ErrorStatus %d warning %q, want an error with the reason", name, r.Status, r.ErrorStatus, r.Warning)
		}
		if m := metricsOf(t, a); !strings.Contains(m, `udpstp_agent_tests_total{status="error",test="`+name+`"} 1`) {
			t.Errorf("/metrics does not count %s as an error: %q", name, regexp.MustCompile(`(?m)^udpstp_agent_tests_total.*$`).FindAllString(m, -1))
		}
	}
}

func metricsOf(t *testing.T, a *agentProc) string {
	t.Helper()
	code, body, err := httpGet(a.base + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	return string(body)
}

// TestAgentSQLiteRefusesE2E: an SQLite store that refuses writes (its
// table renamed away) turns /healthz to 503; the result is kept, and once
// the table is back it is stored and /healthz is 200 again.
func TestAgentSQLiteRefusesE2E(t *testing.T) {
	processTest(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, yearlyTest("refused", fmt.Sprintf("127.0.0.1:%d", freePort(t, "127.0.0.1")), ""))
	a := startAgent(t, dir, config)
	admin, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "results.db")+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	token := pageToken(t, a) // the page reads the store too
	if _, err := admin.Exec(`ALTER TABLE results RENAME TO results_away`); err != nil {
		t.Fatal(err)
	}
	postRun(t, a, token, "refused")
	id := regexp.MustCompile(`result not stored; kept and retried.* id=([0-9a-f-]{36})`).FindStringSubmatch(
		a.waitLine(t, "result not stored; kept", 60*time.Second))
	if id == nil {
		t.Fatalf("no ID in the log:\n%s", a.log())
	}
	health := func() (int, string) {
		code, body, err := httpGet(a.base + "/healthz")
		if err != nil {
			return -1, err.Error()
		}
		return code, string(body)
	}
	if code, body := health(); code != http.StatusServiceUnavailable || !strings.Contains(body, "no such table") {
		t.Errorf("/healthz while the store refuses: %d %q, want 503 and why", code, body)
	}
	if _, err := admin.Exec(`ALTER TABLE results_away RENAME TO results`); err != nil {
		t.Fatal(err)
	}
	a.waitLine(t, `msg="result stored" id=`+id[1], 120*time.Second)
	// The retry logs the write before it drops the result from what it
	// keeps; /healthz turns green with the recovery line, not before.
	a.waitLine(t, "the store takes results again", 60*time.Second)
	if code, body := health(); code != http.StatusOK {
		t.Errorf("/healthz after the repair: %d %q", code, body)
	}
	if rows := a.results(t, store.Filter{Test: "refused"}); len(rows) != 1 || rows[0].ID != id[1] {
		t.Errorf("after the repair: %+v, want the kept result %s", rows, id[1])
	}
}
