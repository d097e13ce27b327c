package capacity

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSendRing sends through the io_uring floor's ring over loopback: each
// socket's datagram arrives whole, turn after turn (the ring's indices
// wrap), and a send the kernel refuses comes back as an error while the
// others still count.
func TestSendRing(t *testing.T) {
	runtime.LockOSThread() // the ring's one submitter
	defer runtime.UnlockOSThread()
	r, err := newSendRing(4)
	if errors.Is(err, errRingUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()

	rx, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rx)
	lo := [4]byte{127, 0, 0, 1}
	if err := unix.Bind(rx, &unix.SockaddrInet4{Addr: lo}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(rx)
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	if err := unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	var fds []int
	for range 3 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, sa); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}

	got := make([]byte, 64)
	for turn := range 5 { // 15 entries through a ring of 4
		buf := bytes.Repeat([]byte{byte('a' + turn)}, 40)
		sent, err := r.sendEach(fds, buf)
		if err != nil || sent != len(fds) {
			t.Fatalf("turn %d: sent %d, %v; want %d, nil", turn, sent, err, len(fds))
		}
		for i := range fds {
			n, _, err := unix.Recvfrom(rx, got, 0)
			if err != nil {
				t.Fatalf("turn %d, datagram %d: %v", turn, i, err)
			}
			if !bytes.Equal(got[:n], buf) {
				t.Fatalf("turn %d, datagram %d: got %q, want %q", turn, i, got[:n], buf)
			}
		}
	}
	if _, err := r.sendEach(make([]int, 5), got); err == nil {
		t.Error("sendEach took more sockets than the ring has entries")
	}

	// A descriptor that is not a socket: its send fails, the others go.
	notSock, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(notSock)
	sent, err := r.sendEach([]int{fds[0], notSock, fds[1]}, got[:8])
	if sent != 2 || !errors.Is(err, unix.ENOTSOCK) {
		t.Errorf("with a non-socket among them: sent %d, %v; want 2, ENOTSOCK", sent, err)
	}
	if k := r.r.Inflight(); k != 0 {
		t.Errorf("%d sends still pending after sendEach returned", k)
	}
}
