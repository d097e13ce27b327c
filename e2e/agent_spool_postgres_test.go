//go:build !small && linux

package e2e

// internal/testkit/pgtest runs PostgreSQL as another user: Linux only.

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
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/store"
)

// spoolAgent is one `udpstp agent --store postgres://... --spool PATH`.
type spoolAgent struct {
	*proc
	name, base string
}

// startSpoolAgent starts an agent of the shared PostgreSQL store, with
// its own spool; unlike startAgent it does not wait for the store.
func startSpoolAgent(t *testing.T, name, dsn, config string) *spoolAgent {
	t.Helper()
	dir := t.TempDir()
	a := &spoolAgent{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", freeTCPPort(t))}
	cmd := exec.Command(udpstpBin, "agent", "--http", strings.TrimPrefix(a.base, "http://"), "--store", dsn,
		"--spool", filepath.Join(dir, "spool.db"), "--identity", name, "--config", config, "--test-min-every", "1s")
	a.proc = start(t, cmd, agentOpts(a.base))
	a.stopAtCleanup(t, name)
	return a
}

var storedID = regexp.MustCompile(`msg="result stored" id=([0-9a-f-]{36}) `)

// stored are the IDs of the results the agent logged as stored, in order.
func (a *spoolAgent) stored() []string {
	var ids []string
	for _, m := range storedID.FindAllStringSubmatch(a.log(), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// gauge reads one of the agent's own gauges from /metrics.
func (a *spoolAgent) gauge(name string) (float64, string) {
	code, body, err := httpGet(a.base + "/metrics")
	if err != nil || code != http.StatusOK {
		return -1, fmt.Sprintf("/metrics: %d %v", code, err)
	}
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1, "/metrics has no " + name
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1, err.Error()
	}
	return v, ""
}

// TestAgentSpoolPostgresOutage: three `udpstp agent` processes, each with
// its own SQLite spool, run five-second tests (the client's shortest) against our server and store
// them in one PostgreSQL ("Nothing lost"). PostgreSQL is stopped
// for $UDPSTP_SPOOL_OUTAGE; the third agent starts while it is down. The
// agents keep testing, their /metrics say results wait and the store is
// down; PostgreSQL comes back, nothing waits any more, the agents stop,
// and in PostgreSQL every result each agent logged as stored is there
// once, none twice, none that was not logged, and each agent has results
// that started during the outage.
func TestAgentSpoolPostgresOutage(t *testing.T) {
	processTest(t)
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	outage := pgtest.Outage(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "127.0.0.1")
	config := filepath.Join(t.TempDir(), "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf(`tolerance = "10m"
[[test]]
name = "down"
servers = ["127.0.0.1:%d"]
direction = "down"
every = "1s"
options = { test-time = 5, rate-index = "20" }
`, port))

	agents := []*spoolAgent{startSpoolAgent(t, "probe-a", dsn, config), startSpoolAgent(t, "probe-b", dsn, config)}
	for _, a := range agents {
		waitUntil(t, 120*time.Second, a.name+": a result uploaded", func() (bool, string) {
			w, detail := a.gauge("udpstp_agent_results_waiting")
			return len(a.stored()) > 0 && w == 0, detail + "\n" + a.log()
		})
	}

	// The outage; the third agent starts during it.
	outageStart := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// need is how many results an agent must have stored for one to
	// have started during the outage: for one that ran before it, two
	// more (the first may have started before).
	need := map[*spoolAgent]int{}
	for _, a := range agents {
		need[a] = len(a.stored()) + 2
	}
	agents = append(agents, startSpoolAgent(t, "probe-c", dsn, config))
	need[agents[2]] = 1
	for _, a := range agents {
		waitUntil(t, outage+120*time.Second, a.name+": results waiting while PostgreSQL is down", func() (bool, string) {
			w, detail := a.gauge("udpstp_agent_results_waiting")
			up, _ := a.gauge("udpstp_agent_store_up")
			failed, _ := a.gauge("udpstp_agent_store_upload_failures_total")
			return len(a.stored()) >= need[a] && w > 0 && up == 0 && failed > 0,
				fmt.Sprintf("waiting %v up %v upload failures %v %s\n%s", w, up, failed, detail, a.log())
		})
	}
	if _, body, err := httpGet(agents[2].base + "/"); err != nil || !strings.Contains(string(body), `class="pending"`) {
		t.Errorf("the page does not say results wait: %v\n%.2000s", err, body)
	}
	// The outage lasts as long as asked (the test's parameter, not a
	// wait for something to happen).
	time.Sleep(time.Until(outageStart.Add(outage)))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	outageEnd := time.Now()

	// The spool's backoff is at most a minute (store.DefaultSpoolMaxBackoff).
	for _, a := range agents {
		waitUntil(t, 180*time.Second, a.name+": nothing waits after PostgreSQL is back", func() (bool, string) {
			w, detail := a.gauge("udpstp_agent_results_waiting")
			up, _ := a.gauge("udpstp_agent_store_up")
			refused, _ := a.gauge("udpstp_agent_results_refused_total")
			return w == 0 && up == 1 && refused == 0, fmt.Sprintf("waiting %v up %v refused %v %s", w, up, refused, detail)
		})
	}
	// Stop them: the last test's result is uploaded before the agent
	// exits (agent.Serve flushes the spool).
	for _, a := range agents {
		a.signal(t, os.Interrupt)
	}
	for _, a := range agents {
		if a.exit(t, await.Deadline) != 0 {
			t.Errorf("%s: %v\n%s", a.name, a.exitErr(), a.log())
		}
		if l := a.log(); strings.Contains(l, "result not stored") || strings.Contains(l, "kept for the next start") {
			t.Errorf("%s: a result not stored, or left in its spool:\n%s", a.name, l)
		}
		// The outage is logged when it starts and when it ends, once
		// each (the spool's state changes), never per result.
		if l := a.log(); strings.Count(l, "spool: uploads fail") == 0 || strings.Count(l, "spool: uploads go through again") == 0 {
			t.Errorf("%s: the outage's start or its end is not in the log:\n%s", a.name, l)
		}
	}

	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, a := range agents {
		logged := a.stored()
		rows, err := st.List(context.Background(), store.Filter{Agent: a.name})
		if err != nil {
			t.Fatal(err)
		}
		inDB := map[string]int{}
		during := 0
		for _, r := range rows {
			inDB[r.ID]++
			if r.Start.After(outageStart) && r.Start.Before(outageEnd) {
				during++
			}
		}
		for id, n := range inDB {
			if n != 1 {
				t.Errorf("%s: result %s is in PostgreSQL %d times", a.name, id, n)
			}
		}
		for _, id := range logged {
			if inDB[id] == 0 {
				t.Errorf("%s: result %s logged as stored is not in PostgreSQL", a.name, id)
			}
			delete(inDB, id)
		}
		for id := range inDB {
			t.Errorf("%s: result %s in PostgreSQL was never logged as stored", a.name, id)
		}
		if during == 0 {
			t.Errorf("%s: no result in PostgreSQL from the outage (%s to %s)", a.name,
				outageStart.Format(time.RFC3339Nano), outageEnd.Format(time.RFC3339Nano))
		}
		t.Logf("%s: %d results stored, %d of them started during the %v outage", a.name, len(logged), during, outage)
	}
}
