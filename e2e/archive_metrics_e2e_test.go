//go:build !small

package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServerArchiveMetrics: the server's /metrics counts its archive's
// records (written, failed, dropped): after one served test, one written
// and none failed or dropped; a server without an archive has no such
// counter.
func TestServerArchiveMetrics(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	maddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "--archive", filepath.Join(t.TempDir(), "archive"),
		"--metrics-listen", maddr, "127.0.0.1")
	scrape := func() string {
		_, body, _ := httpGet("http://" + maddr + "/metrics")
		return string(body)
	}
	count := func(body, result string) string {
		m := regexp.MustCompile(`(?m)^udpstp_archive_records_total\{result="` + result + `"\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return "none"
		}
		return m[1]
	}
	if b := scrape(); count(b, "written") != "0" || count(b, "failed") != "0" || count(b, "dropped") != "0" {
		t.Fatalf("before a test: written %s failed %s dropped %s", count(b, "written"), count(b, "failed"), count(b, "dropped"))
	}
	r, code, out := ourClient(t, "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	checkComplete(t, r, code, out, 5)
	waitUntil(t, 30*time.Second, "the record counted as written", func() (bool, string) {
		b := scrape()
		return count(b, "written") == "1", b
	})
	if b := scrape(); count(b, "failed") != "0" || count(b, "dropped") != "0" {
		t.Errorf("after a test: failed %s dropped %s", count(b, "failed"), count(b, "dropped"))
	}

	// No archive: no archive counter.
	port2 := freePort(t, "127.0.0.1")
	maddr2 := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port2), "--metrics-listen", maddr2, "127.0.0.1")
	if _, body, err := httpGet("http://" + maddr2 + "/metrics"); err != nil || strings.Contains(string(body), "udpstp_archive_") {
		t.Errorf("a server without an archive: %v, archive counters: %t", err, strings.Contains(string(body), "udpstp_archive_"))
	}
}
