package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

func TestWaitDeadline(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	fds := []waitFD{{sock: s}}
	now := clock.Mono()
	if err := wait(fds, nil, now.Add(20*time.Millisecond), now); err != nil {
		t.Fatal(err)
	}
	el := clock.Mono().Sub(now)
	if el < 19*time.Millisecond || el > time.Second {
		t.Fatalf("waited %v for 20 ms", el)
	}
	if f := fds[0]; f.in || f.errored || f.closed {
		t.Fatalf("readiness %+v after a timeout", f)
	}
}

func TestWaitReadable(t *testing.T) {
	a, b := openPair(t, "127.0.0.1:0", SocketOptions{})
	var sb dataphase.SendBuffer
	fillPlan(&sb, 1, 0, 100)
	go func() {
		time.Sleep(10 * time.Millisecond)
		a.SendBatch(&sb)
	}()
	fds := []waitFD{{sock: b}}
	now := clock.Mono()
	if err := wait(fds, nil, clock.Never, now); err != nil {
		t.Fatal(err)
	}
	if !fds[0].in {
		t.Fatalf("readiness %+v", fds[0])
	}
	var rb dataphase.RecvBatch
	if err := b.RecvBatch(&rb, 10); err != nil || rb.N != 1 {
		t.Fatalf("read %d, %v", rb.N, err)
	}
}

func TestWaker(t *testing.T) {
	s := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{})
	wk, err := NewWaker()
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	fds := []waitFD{{sock: s}}

	// A wake while waiting without a deadline.
	go func() {
		time.Sleep(20 * time.Millisecond)
		wk.Wake()
	}()
	start := time.Now()
	if err := wait(fds, wk, clock.Never, clock.Mono()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 15*time.Millisecond || el > 2*time.Second {
		t.Fatalf("woken after %v", el)
	}

	// A wake before the wait ends it at once, and only that one.
	wk.Wake()
	wk.Wake()
	start = time.Now()
	if err := wait(fds, wk, clock.Never, clock.Mono()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Fatalf("pending wake took %v", el)
	}
	now := clock.Mono()
	if err := wait(fds, wk, now.Add(20*time.Millisecond), now); err != nil {
		t.Fatal(err)
	}
	if el := clock.Mono().Sub(now); el < 19*time.Millisecond {
		t.Fatalf("a consumed wake ended the next wait after %v", el)
	}

	// Waking a closed Waker is harmless.
	wk.Close()
	wk.Wake()
}
