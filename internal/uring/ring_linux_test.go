package uring

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// udpPair returns the descriptor of a socket connected to a bound one on
// loopback, and the bound one, whose reads time out after 2 s; both are
// closed with the test.
func udpPair(t *testing.T) (tx int, rx *net.UDPConn) {
	t.Helper()
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	if err := rx.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.File() // a blocking duplicate, for the ring
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return int(f.Fd()), rx
}

func msgOf(p []byte) *unix.Msghdr {
	iov := &unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	m := &unix.Msghdr{Iov: iov}
	m.SetIovlen(1)
	return m
}

// Linked sendmsg entries leave in order, and a refusal in a chain cancels
// what it links to while another chain of the same submission still
// goes; every completion is reaped and comes back with its user value.
func TestLinkedSendmsg(t *testing.T) {
	r, err := New(8, Options{})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, ra := udpPair(t)
	b, rb := udpPair(t)
	notSock, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(notSock)

	m1, m2, m3, m4 := msgOf([]byte("one")), msgOf([]byte("two")), msgOf([]byte("three")), msgOf([]byte("four"))
	// Chain 1: a, a. Chain 2: the non-socket, then b (cancelled). Alone: b.
	r.PrepSendmsg(a, m1, unix.MSG_DONTWAIT, 1, true)
	r.PrepSendmsg(a, m2, unix.MSG_DONTWAIT, 2, false)
	r.PrepSendmsg(notSock, m3, unix.MSG_DONTWAIT, 3, true)
	r.PrepSendmsg(b, m3, unix.MSG_DONTWAIT, 4, false)
	r.PrepSendmsg(b, m4, unix.MSG_DONTWAIT, 5, false)
	if n, err := r.Submit(); n != 5 || err != nil {
		t.Fatalf("Submit: %d, %v", n, err)
	}
	if k := r.Inflight(); k > 0 {
		if err := r.Wait(k); err != nil {
			t.Fatal(err)
		}
	}
	res := map[uint64]int32{}
	for {
		u, v, ok := r.Next()
		if !ok {
			break
		}
		res[u] = v
	}
	want := map[uint64]int32{1: 3, 2: 3, 3: -int32(unix.ENOTSOCK), 4: -int32(unix.ECANCELED), 5: 4}
	for u, v := range want {
		if got, ok := res[u]; !ok || got != v {
			t.Errorf("completion %d: %d (posted %v), want %d", u, got, ok, v)
		}
	}
	if r.Inflight() != 0 || len(res) != 5 {
		t.Errorf("%d completions, %d still in flight", len(res), r.Inflight())
	}
	got := make([]byte, 16)
	for _, w := range []string{"one", "two"} {
		n, err := ra.Read(got)
		if err != nil || string(got[:n]) != w {
			t.Fatalf("a's peer read %q, %v; want %q", got[:n], err, w)
		}
	}
	n, err := rb.Read(got)
	if err != nil || !bytes.Equal(got[:n], []byte("four")) {
		t.Fatalf("b's peer read %q, %v; want only \"four\"", got[:n], err)
	}
	// Loopback delivers at once: a cancelled send that went would be there.
	if err := rb.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := rb.Read(got); err == nil {
		t.Fatalf("b's peer read %q too: the cancelled send went", got[:n])
	}
	if r.Space() != 8 {
		t.Errorf("Space %d after the submission, want 8", r.Space())
	}
}
