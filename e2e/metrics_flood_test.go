//go:build linux

package e2e

// The metrics endpoint under a flood of idle connections (docs/security.md,
// "The metrics listener"): the server's descriptors and memory stay
// bounded, and the tests it serves go on.

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/udpstp/udpstp/internal/testkit/await"
)

// procFDs is the number of descriptors process pid holds.
func procFDs(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// procKB reads a kB figure (VmRSS, VmHWM) of /proc/PID/status.
func procKB(t *testing.T, pid int, key string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return 0
}

// dialMany opens n TCP connections to addr; request, if not empty, is
// written on each. The kernel completes them whether or not the server
// accepts them (its accept queue is the listen backlog).
func dialMany(t *testing.T, addr string, n int, request string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
		if request != "" {
			if _, err := c.Write([]byte(request)); err != nil {
				t.Fatalf("request on connection %d: %v", len(conns), err)
			}
		}
	}
	return conns
}

// TestMetricsListenerFlood attacks the endpoint as the review did:
//
//   - 2,000 keep-alive connections, each with a request, then closed: the
//     server's peak memory (VmHWM) stays within 32 MB of what it used
//     before (each connection it held would cost tens of kB, 2,000 of
//     them tens of MB), and its descriptors come back to where they were;
//   - under a descriptor limit of 1,024 (RLIMIT_NOFILE, set on the running
//     server), 1,200 idle connections that send nothing: the server holds
//     at most the endpoint's cap of them, and a capacity test run meanwhile
//     completes with ErrorStatus 0 (before the cap, every Setup was
//     refused with 113: no descriptor left for the Test Connection).
func TestMetricsListenerFlood(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	maddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "--metrics-listen", maddr, "127.0.0.1")
	pid := srv.cmd.Process.Pid
	if code, _, err := httpGet("http://" + maddr + "/metrics"); err != nil || code != 200 {
		t.Fatalf("scrape before the flood: %d %v", code, err)
	}
	fd0, rss0 := procFDs(t, pid), procKB(t, pid, "VmRSS")
	// The cap of the endpoint's connections (metrics.maxConns) and room
	// for the descriptors a server opens by itself (epoll, timers).
	const bound = 32 + 16

	// 2,000 keep-alive connections with a request each, then closed.
	conns := dialMany(t, maddr, 2000, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	peak := 0
	for _, c := range conns {
		peak = max(peak, procFDs(t, pid))
		c.Close()
	}
	await.True(t, "the server's descriptors back after the connections closed", func() bool {
		peak = max(peak, procFDs(t, pid))
		return procFDs(t, pid) <= fd0+2
	})
	hwm := procKB(t, pid, "VmHWM")
	t.Logf("2,000 connections: descriptors %d before, %d at most; memory %d kB before, peak %d kB, now %d kB",
		fd0, peak, rss0, hwm, procKB(t, pid, "VmRSS"))
	if peak > fd0+bound {
		t.Errorf("the server held %d descriptors during the flood (%d before): the endpoint's connections are not capped", peak, fd0)
	}
	if hwm-rss0 > 32<<10 {
		t.Errorf("the server's memory peaked %d kB above the %d kB it used before 2,000 connections", hwm-rss0, rss0)
	}

	// 1,200 idle connections under a limit of 1,024 descriptors.
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: 1024}, nil); err != nil {
		t.Fatalf("lowering the server's RLIMIT_NOFILE: %v", err)
	}
	idle := dialMany(t, maddr, 1200, "")
	var most atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(procFDs(t, pid)); n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond): // a sampling period, not a wait for an event
			}
		}
	}()
	r, code, out := ourClient(t, "-t", "5", "-I", "20", "-p", fmt.Sprint(port), "-d", "127.0.0.1")
	close(stop)
	<-sampled
	t.Logf("1,200 idle connections: the server held at most %d descriptors (%d before); the test's ErrorStatus %d", most.Load(), fd0, r.ErrorStatus)
	checkComplete(t, r, code, out, 5)
	if most.Load() > int64(fd0+bound) {
		t.Errorf("the server held %d descriptors with 1,200 idle connections open (%d before)", most.Load(), fd0)
	}
	for _, c := range idle {
		c.Close()
	}
}
