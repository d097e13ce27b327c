//go:build !small

package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// idleWindow is how long BenchmarkAgentIdle counts the agent's wake-ups.
const idleWindow = 30 * time.Second

// BenchmarkAgentIdle measures an idle agent (no tests configured, the
// store and the page on): its resident memory after a warm-up (the page
// and /metrics served once) and its wake-ups per second, the context
// switches of all its threads over 30 s (docs/agent.md's figures). Issue
// 26's goals: under 25 MB and at most one wake-up a second. One run is one agent (b.N is not used:
// the figures are of a process, not of an operation).
func BenchmarkAgentIdle(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(udpstpBin, "agent", "--http", addr, "--store", "sqlite:"+filepath.Join(b.TempDir(), "results.db"), "--identity", "bench")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil && r.StatusCode == http.StatusOK {
			r.Body.Close()
			break
		}
		if time.Since(start) > time.Minute {
			b.Fatal("the agent did not serve /healthz within a minute")
		}
	}
	for _, p := range []string{"/", "/metrics"} {
		r, err := http.Get("http://" + addr + p)
		if err != nil {
			b.Fatal(err)
		}
		r.Body.Close()
	}
	pid := cmd.Process.Pid
	time.Sleep(5 * time.Second) // settles: start-up's goroutines end
	b.ResetTimer()
	before := contextSwitches(b, pid)
	time.Sleep(idleWindow)
	after := contextSwitches(b, pid)
	b.StopTimer()
	b.ReportMetric(float64(after-before)/idleWindow.Seconds(), "wakeups/s")
	// VmRSS counts the binary's pages the process touched (RssFile:
	// shared, in the page cache) with its own memory (RssAnon: the Go
	// heap, stacks, the runtime's).
	for _, f := range []struct{ field, unit string }{{"VmRSS", "RSS-MB"}, {"RssAnon", "anon-MB"}} {
		kb, err := statusField(fmt.Sprintf("/proc/%d/status", pid), f.field)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(kb)/1024, f.unit)
	}
	b.ReportMetric(0, "ns/op")
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of process pid (a thread that ended meanwhile takes its
// count with it: the figure errs low by the few a short thread made).
func contextSwitches(b *testing.B, pid int) int64 {
	b.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("the agent's threads: %v", err)
	}
	var n int64
	for _, t := range tasks {
		v, err1 := statusField(t, "voluntary_ctxt_switches")
		nv, err2 := statusField(t, "nonvoluntary_ctxt_switches")
		if err1 == nil && err2 == nil { // else the thread has ended
			n += v + nv
		}
	}
	return n
}

// statusField reads field (a number, kB for sizes) from a /proc status
// file.
func statusField(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, path)
}
