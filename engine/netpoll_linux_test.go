//go:build !portable

package engine

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestControlWaitsHoldNoThread: sockets waiting in RecvFrom (a server's
// Test Connections awaiting their activation) park goroutines in the
// netpoller; a ppoll in each would hold an OS thread apiece, which a Setup
// flood turned into 262 threads.
//
// What is judged is how many threads sit blocked in a wait system call
// once every waiter is parked, not the process's thread count: the runtime
// starts threads for goroutines that were in a system call when it took
// their P, and keeps them, so on a busy machine the count grows (6 -> 59
// was seen) with no wait holding one.
func TestControlWaitsHoldNoThread(t *testing.T) {
	const waiters = 200
	before := osThreads(t)
	socks := make([]*Socket, waiters)
	errs := make(chan error, waiters)
	for i := range socks {
		socks[i] = mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
		go func(s *Socket) {
			b := make([]byte, 64)
			_, _, err := s.RecvFrom(b, time.Now().Add(time.Minute))
			errs <- err
		}(socks[i])
	}
	// Wait until every waiter is parked in the netpoller ("IO wait").
	deadline := time.Now().Add(30 * time.Second)
	for parkedInRecv() < waiters {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d waiters parked in the netpoller", parkedInRecv(), waiters)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	blocked := threadsInWaits(t)
	t.Logf("%d waiting sockets: OS threads %d -> %d, %d of them blocked in a wait system call", waiters, before, osThreads(t), blocked)
	if blocked > waiters/4 {
		t.Errorf("%d waiting sockets: %d threads blocked in ppoll or a receive call", waiters, blocked)
	}
	// Each wait really was a wait: a datagram ends one, Close the others.
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(socks[0].LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatalf("the waiter that got a datagram: %v", err)
	}
	for _, s := range socks {
		s.Close()
	}
	for range waiters - 1 {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("a waiter whose socket closed: %v, want net.ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not end a wait")
		}
	}
}

// TestControlWaitDeadline: a RecvFrom deadline ends the wait with
// os.ErrDeadlineExceeded, and the socket still works after it.
func TestControlWaitDeadline(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	buf := make([]byte, 64)
	if _, _, err := a.RecvFrom(buf, time.Now().Add(20*time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvFrom past its deadline: %v", err)
	}
	if err := b.SendTo([]byte("hello"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	n, from, err := a.RecvFrom(buf, time.Now().Add(10*time.Second))
	if err != nil || string(buf[:n]) != "hello" || from.Port() != b.LocalAddr().Port() {
		t.Fatalf("RecvFrom after a deadline: %q from %v, %v", buf[:n], from, err)
	}
}

// parkedInRecv counts goroutines parked in the netpoller inside waitRead.
func parkedInRecv() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("[IO wait")) && bytes.Contains(g, []byte("waitRead")) {
			n++
		}
	}
	return n
}

// threadsInWaits counts this process's threads blocked in ppoll or a
// receive system call (/proc/self/task/TID/syscall starts with the call's
// number while a thread is in one): each is a thread a wait holds. The
// netpoller's own epoll_pwait is not among them.
func threadsInWaits(t *testing.T) int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	waits := map[string]bool{}
	for _, nr := range []int{unix.SYS_PPOLL, unix.SYS_RECVFROM, unix.SYS_RECVMSG, unix.SYS_RECVMMSG} {
		waits[strconv.Itoa(nr)] = true
	}
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 && waits[f[0]] {
			n++
		}
	}
	return n
}

// osThreads is the process's OS thread count.
func osThreads(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}
