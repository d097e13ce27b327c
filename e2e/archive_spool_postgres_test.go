//go:build !small && linux

package e2e

// internal/testkit/pgtest runs PostgreSQL as another user: Linux only.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/pgtest"
)

// TestServerArchiveSpoolPostgres: a server with --archive DIR and
// --store postgres://... starts while PostgreSQL is down, serves a test,
// says on /metrics that its record waits in the spool (in DIR), and once
// PostgreSQL is back the record is there, once, the same as in the files.
func TestServerArchiveSpoolPostgres(t *testing.T) {
	e2e(t)
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	arc := filepath.Join(t.TempDir(), "archive")
	port := freePort(t, "127.0.0.1")
	maddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "--archive", arc, "--archive-name", "srv1",
		"--store", dsn, "--metrics-listen", maddr, "127.0.0.1")
	waiting := func() string {
		_, body, _ := httpGet("http://" + maddr + "/metrics")
		if m := regexp.MustCompile(`(?m)^udpstp_archive_records_waiting (\S+)$`).FindSubmatch(body); m != nil {
			return string(m[1])
		}
		return "none"
	}
	r, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	checkComplete(t, r, code, out, 5)
	waitUntil(t, 30*time.Second, "the record waiting in the spool", func() (bool, string) {
		w := waiting()
		return w == "1", "waiting " + w + "\n" + srv.log()
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The spool's backoff is at most a minute (store.DefaultSpoolMaxBackoff).
	waitUntil(t, 120*time.Second, "the record uploaded", func() (bool, string) {
		w := waiting()
		return w == "0", "waiting " + w
	})
	stopServer(t, srv)
	recs := readArchive(t, arc)
	if len(recs) != 1 {
		t.Fatalf("%d records for one test\n%s", len(recs), srv.log())
	}
	checkStored(t, dsn, recs)
}
