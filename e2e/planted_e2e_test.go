//go:build !small && linux

package e2e

// Files planted at a service's own paths, attacked with real processes
// (docs/security.md, "The result store and the agent's configuration"): a
// FIFO at `udpstp history`'s --store (the database, its WAL or its index)
// or at the agent's configuration file. Before the defence each blocked
// the process in open(2) or read(2) until it was killed: history for
// ever, the agent at its start or in a SIGHUP reload, which held up its
// SIGTERM too. Each run here is bounded (plantedLimit); a run that reaches
// the bound is the failure.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// plantedLimit bounds each process: generous on a busy machine, where
// the refusal takes milliseconds.
const plantedLimit = 60 * time.Second

// runPlanted runs udpstp with args for at most plantedLimit and returns
// its exit status and output; hung says the bound killed it.
func runPlanted(t *testing.T, args ...string) (code int, out string, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), plantedLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, udpstpBin, args...)
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return -1, string(b), true
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(b), false
	case err != nil:
		t.Fatal(err)
	}
	return 0, string(b), false
}

// plantFIFO makes a FIFO at path (no writer will ever open it).
func plantFIFO(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedHistoryStore: `udpstp history` on a store whose database is
// a FIFO, a symbolic link, or whose -wal, -shm or -journal name is a
// FIFO, exits at once with an error naming what is there; the same store
// with the planted name removed lists its result.
func TestPlantedHistoryStore(t *testing.T) {
	processTest(t)
	for _, c := range []struct{ name, suffix, kind string }{
		{"fifo", "", "is a FIFO"},
		{"link", "", "is a symbolic link"},
		{"wal", "-wal", "is a FIFO"},
		{"shm", "-shm", "is a FIFO"},
		{"journal", "-journal", "is a FIFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "results.db")
			seeded := c.suffix != ""
			if seeded {
				st, err := store.Open(context.Background(), "sqlite:"+db)
				if err != nil {
					t.Fatal(err)
				}
				r := &store.Result{ID: "00000000-0000-4000-8000-0000000000aa", Origin: store.OriginClient, Agent: "a",
					Test: "t", Server: "s:1", Direction: "down", Start: time.Now().Add(-time.Hour), End: time.Now(), Status: store.StatusOK}
				if err := st.Put(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				st.Close()
			}
			planted := db + c.suffix
			if c.name == "link" {
				other := filepath.Join(dir, "elsewhere")
				plantFIFO(t, other)
				if err := os.Symlink(other, planted); err != nil {
					t.Fatal(err)
				}
			} else {
				plantFIFO(t, planted)
			}
			start := time.Now()
			code, out, hung := runPlanted(t, "history", "--store", "sqlite:"+db, "--format", "json")
			t.Logf("%s planted: exit %d after %v: %s", planted, code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
			if hung {
				t.Fatalf("history did not exit within %v with %s planted", plantedLimit, planted)
			}
			if code == 0 || !strings.Contains(out, c.kind) || !strings.Contains(out, filepath.Base(planted)) {
				t.Errorf("exit %d %q: want an error saying %s %s", code, out, planted, c.kind)
			}
			if !seeded {
				return
			}
			os.Remove(planted)
			if code, out, hung := runPlanted(t, "history", "--store", "sqlite:"+db, "--format", "json"); hung || code != 0 || !strings.Contains(out, "0000000000aa") {
				t.Errorf("the store without the planted name: exit %d hung %v %q", code, hung, out)
			}
		})
	}
}

// TestPlantedAgentConfig: the agent's configuration file replaced by a
// FIFO. A SIGHUP reload is refused at once (logged; the configuration in
// force stays, the agent serves on) and SIGTERM then ends the agent; a
// SIGHUP and a SIGTERM sent together end it too; an agent started with
// the FIFO as its file exits at once with an error naming it.
func TestPlantedAgentConfig(t *testing.T) {
	processTest(t)
	a, _ := agentWithFIFO(t)
	a.signal(t, syscall.SIGHUP)
	waitUntil(t, plantedLimit, "the reload refused", func() (bool, string) {
		l := a.log()
		return strings.Contains(l, "reload refused") && strings.Contains(l, "is a FIFO"), l
	})
	if code, _, err := httpGet(a.base + "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("after the refused reload: /healthz %d %v", code, err)
	}
	stopWithin(t, a, syscall.SIGTERM)

	// SIGHUP and SIGTERM at once: whichever the agent takes first, it
	// exits.
	b, config := agentWithFIFO(t)
	b.signal(t, syscall.SIGHUP)
	b.signal(t, syscall.SIGTERM)
	stopWithin(t, b, 0)

	// At start: a configuration error, at once.
	code, out, hung := runPlanted(t, "agent", "--config", config, "--http", fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t)),
		"--store", "sqlite:"+filepath.Join(filepath.Dir(config), "other.db"))
	if hung || code == 0 || !strings.Contains(out, "agent.toml: is a FIFO") {
		t.Errorf("an agent started with a FIFO as its file: exit %d hung %v %q", code, hung, out)
	}
}

// agentWithFIFO starts an agent with a configuration file, then replaces
// the file with a FIFO, and returns the agent and the file's path.
func agentWithFIFO(t *testing.T) (*agentProc, string) {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "agent.toml")
	writeAgentFile(t, config, "[probe]\nmin_interval = \"1s\"\n")
	a := startAgent(t, dir, config)
	a.stopAtCleanup(t, "agent")
	plantFIFO(t, config)
	return a, config
}

// stopWithin sends sig (0: none, one was sent) and waits plantedLimit for
// the agent to exit.
func stopWithin(t *testing.T, a *agentProc, sig syscall.Signal) {
	t.Helper()
	if sig != 0 {
		a.signal(t, sig)
	}
	if !a.waitExit(plantedLimit) {
		a.kill()
		t.Fatalf("the agent did not exit within %v of SIGTERM:\n%s", plantedLimit, a.log())
	}
}
