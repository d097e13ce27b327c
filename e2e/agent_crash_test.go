//go:build !small

package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the store's own driver, for PRAGMA integrity_check

	"github.com/udpstp/udpstp/store"
)

// TestAgentKill9: the agent killed with SIGKILL 20 times at random
// moments while it tests and writes (one test against a dead server
// stores a missed result every second or so, one runs real tests) leaves a
// store that passes PRAGMA integrity_check and holds every result the
// agent logged as stored. The real tests run at a fixed 20 Mbit/s: what
// is under test is the store, not the rate.
func TestAgentKill9(t *testing.T) {
	processTest(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", strconv.Itoa(port), "127.0.0.1")
	dead := freePort(t, "127.0.0.1")
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, fmt.Sprintf(`tolerance = "10m"
[[test]]
name = "dead"
servers = ["127.0.0.1:%d"]
direction = "up"
every = "1s"

[[test]]
name = "real"
servers = ["127.0.0.1:%d"]
direction = "down"
every = "1s"
options = { test-time = 5, rate-index = "20" }
`, dead, port))
	db := filepath.Join(dir, "results.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))
	var logged []string
	var logs bytes.Buffer
	for round := range 20 {
		httpAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		a := start(t, exec.Command(udpstpBin, "agent", "--config", config, "--http", httpAddr, "--store", "sqlite:"+db,
			"--identity", "crash", "--test-min-every", "1s"), agentOpts("http://"+httpAddr))
		// A random moment: the kill is the event under test, not a wait
		// for something to happen.
		time.Sleep(500*time.Millisecond + time.Duration(rng.Int64N(int64(5*time.Second))))
		a.kill() // and reaped, its output all in
		out := a.errors()
		for _, m := range storedRe.FindAllStringSubmatch(out, -1) {
			logged = append(logged, m[1])
		}
		fmt.Fprintf(&logs, "--- round %d\n%s", round, out)
	}
	if len(logged) < 10 {
		t.Errorf("only %d results logged as stored in 20 rounds (want 10 or more): the kills did not come while it wrote\n%s", len(logged), logs.String())
	}

	conn, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := conn.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check: %q, %v", check, err)
	}
	conn.Close()
	st, err := store.Open(context.Background(), "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	missing := 0
	for _, id := range logged {
		if _, err := st.Get(context.Background(), id); err != nil {
			missing++
			t.Errorf("result %s was logged as stored: %v", id, err)
		}
	}
	rows, _ := st.List(context.Background(), store.Filter{})
	real := 0
	for _, r := range rows {
		if r.Test == "real" && r.Status == store.StatusOK {
			real++
		}
	}
	t.Logf("%d results logged as stored, %d missing, %d rows (%d real tests completed)", len(logged), missing, len(rows), real)
	if !strings.Contains(logs.String(), "agent serving") {
		t.Error("no agent started")
	}
}
