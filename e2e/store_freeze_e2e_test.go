//go:build !small && linux

package e2e

// The server's --store hung (docs/fleet.md, "The server's store"), with
// real processes: a PostgreSQL frozen with SIGSTOP while the server
// serves holds no test's slot; a SIGTERM during the freeze stops the
// server within --drain-timeout with the records on disk, and the next
// start delivers them.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/pgtest"
	"github.com/udpstp/udpstp/server"
	"github.com/udpstp/udpstp/store"
)

// serverResultIDs lists the IDs of the server's results in the store at
// spec, sorted.
func serverResultIDs(t *testing.T, spec string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs, err := st.List(context.Background(), store.Filter{Origin: store.OriginServer})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// outboxWaiting is the IDs the spool's outbox lists as waiting ("p"
// lines without their "a"), sorted.
func outboxWaiting(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		op, id, _ := strings.Cut(l, " ")
		switch op {
		case "p":
			waiting[id] = true
		case "a":
			delete(waiting, id)
		}
	}
	var ids []string
	for id := range waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestServerStorePostgresFrozen: a server with --store postgres://...
// (no --archive) and two connections at most; PostgreSQL is frozen
// (SIGSTOP) after the first record went in. Two tests during the freeze
// complete and release their slots: a third client then gets ErrorStatus
// 0, not 113. SIGTERM with --drain-timeout 3s during the freeze: the
// server exits 0 within the drain's bound (not after the store's
// timeouts), logs "stopped" after it kept the records, and they are on
// disk in its spool. PostgreSQL thawed, the next start delivers them:
// every record of the four tests is in PostgreSQL once.
func TestServerStorePostgresFrozen(t *testing.T) {
	processTest(t) // its tests run at a fixed 20 Mbit/s
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	state := t.TempDir()
	port := freePort(t, "127.0.0.1")
	const drain = 3 * time.Second
	argv := []string{udpstpBin, "server", "-p", fmt.Sprint(port), "--max-connections", "2", "--store", dsn,
		"--archive-name", "srv1", "--drain-timeout", drain.String(), "127.0.0.1"}
	env := []string{"STATE_DIRECTORY=" + state}
	srv := startService(t, env, nil, argv...)
	client := func() clientRun {
		return <-clientInBackground("-d", "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1")
	}
	complete := func(what string, r clientRun) {
		t.Helper()
		if r.err != nil || r.code != 0 || r.res.ErrorStatus != 0 {
			t.Fatalf("%s: exit %d, ErrorStatus %d %q, %v\n%s\nserver:\n%s", what, r.code, r.res.ErrorStatus,
				r.res.ErrorMessage, r.err, r.out, srv.log())
		}
	}
	complete("the test before the freeze", client())
	await.True(t, "the first record in PostgreSQL", func() bool { return len(serverResultIDs(t, dsn)) == 1 })

	thaw, err := c.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	a, b := clientInBackground("-d", "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1"),
		clientInBackground("-u", "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "127.0.0.1")
	complete("a test during the freeze", <-a)
	complete("a test during the freeze", <-b)
	// Both slots of --max-connections 2 are free again although the
	// store hangs.
	complete("a test after two ended during the freeze", client())

	srv.signal(t, syscall.SIGTERM)
	// The drain's bound, and room for a process to exit on a busy
	// machine; the store's own timeouts (10 s a call) are not waited for.
	if !srv.waitExit(drain + 10*time.Second) {
		t.Fatalf("the server still runs %v after SIGTERM with --drain-timeout %v:\n%s", drain+10*time.Second, drain, srv.log())
	}
	if code := srv.exitCode(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	log := srv.log()
	kept, stopped := strings.Index(log, "records kept in the spool"), strings.Index(log, "udpstp server stopped")
	if kept < 0 || stopped < kept {
		t.Errorf("the log does not say the records were kept before it says stopped:\n%s", log)
	}
	spool := filepath.Join(state, server.ServerSpoolFile)
	waiting := outboxWaiting(t, spool+".outbox")
	if len(waiting) != 3 {
		t.Fatalf("%d records wait in the spool's outbox, want the 3 of the freeze: %v\n%s", len(waiting), waiting, log)
	}
	onDisk := serverResultIDs(t, "sqlite:"+spool)
	for _, id := range waiting {
		if _, ok := slices.BinarySearch(onDisk, id); !ok {
			t.Errorf("record %s waits in the outbox but is not in the spool %s", id, spool)
		}
	}
	if err := thaw(); err != nil {
		t.Fatal(err)
	}

	// The next start delivers what waits.
	srv = startService(t, env, nil, argv...)
	await.True(t, "the four records in PostgreSQL", func() bool { return len(serverResultIDs(t, dsn)) == 4 })
	stopServer(t, srv)
	ids := serverResultIDs(t, dsn)
	for _, id := range waiting {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			t.Errorf("record %s kept in the spool is not in PostgreSQL: %v", id, ids)
		}
	}
	if w := outboxWaiting(t, spool+".outbox"); len(w) != 0 {
		t.Errorf("still waiting after the delivery: %v", w)
	}
	if left := serverResultIDs(t, "sqlite:"+spool); len(left) != 0 {
		t.Errorf("the spool keeps %d delivered records", len(left))
	}
}
