//go:build unix

package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// TestInFlightRecover: a test in flight at a kill is stored at the next
// start as an interrupted error, once; a FIFO, a link or an oversized
// file planted at the in-flight name is refused at once (no hang, nothing
// followed), and never stored.
func TestInFlightRecover(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db.running")
	cfg := mustParse(t, "[[test]]\nname = \"a\"\nservers = [\"s1\"]\ndirection = \"both\"\n")
	newAgent := func() (*Agent, *memStore, *syncBuffer) {
		st, log := &memStore{}, &syncBuffer{}
		return New(cfg, Options{Store: st, Identity: "p", InFlight: path, Log: slog.New(slog.NewTextHandler(log, nil))}), st, log
	}
	a, _, _ := newAgent()
	a.markInFlight(a.test("a"), "run now") // and killed: never removed
	b, st, _ := newAgent()
	b.recoverInFlight(context.Background())
	rows := st.all()
	if len(rows) != 2 || rows[0].Status != store.StatusError || !strings.HasPrefix(rows[0].Warning, "interrupted:") ||
		rows[0].Direction != "down" || rows[1].Direction != "up" {
		t.Fatalf("after the kill: %+v", rows)
	}
	b.recoverInFlight(context.Background())
	if len(st.all()) != 2 {
		t.Error("the interruption stored twice")
	}
	// Killed after the first direction's result was stored: the second
	// alone is interrupted.
	a.markInFlight(a.test("a"), "run now")
	a.inFlightStored("down")
	b, st, _ = newAgent()
	b.recoverInFlight(context.Background())
	if rows := st.all(); len(rows) != 1 || rows[0].Direction != "up" {
		t.Errorf("killed during the upstream half: %+v", rows)
	}

	target := filepath.Join(dir, "elsewhere")
	a.markInFlight(a.test("a"), "run now")
	if err := os.Rename(path, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxInFlight+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, planted := range []string{"link", "fifo", "big"} {
		if planted != "link" {
			os.Remove(path)
			if err := os.Rename(filepath.Join(dir, planted), path); err != nil {
				t.Fatal(err)
			}
		}
		c, st, log := newAgent()
		done := make(chan struct{})
		go func() { defer close(done); c.recoverInFlight(context.Background()) }()
		select {
		case <-done:
		case <-time.After(time.Minute): // a bound on a hang, not a timing
			t.Fatalf("%s: recoverInFlight hangs", planted)
		}
		if n := len(st.all()); n != 0 || !strings.Contains(log.String(), "in-flight record unreadable") {
			t.Errorf("%s: %d results stored; log %s", planted, n, log.String())
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target: %v (removed through the link?)", err)
	}
}
