//go:build linux

package netlab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Test traffic: every datagram starts with a 2-byte id (loadPDUID, so the
// default loss scope applies, or statusID, which it does not) and an
// 8-byte sequence number.
const (
	statusID  = 0xFEED
	seqOffset = 2
	hdrLen    = 10
	// udpIPv4Overhead is what tbf meters on top of a UDP payload over
	// IPv4: 8 UDP + 20 IPv4 + 14 Ethernet.
	udpIPv4Overhead = 8 + 20 + EthHeader
)

// skipUnlessAvailable skips t when a lab for cfg cannot run here.
func skipUnlessAvailable(t *testing.T, cfg Config) {
	t.Helper()
	if err := AvailableFor(cfg); err != nil {
		t.Skip(err)
	}
}

// listen opens a UDP socket on addr:0 in ns, closed with the test, with a
// large receive buffer so the receiver never loses what tbf delivered.
func listen(t *testing.T, l *Lab, ns string, addr netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := l.ListenUDP(ns, netip.AddrPortFrom(addr, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := sockopt(c, func(fd int) error {
		return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	}); err != nil {
		t.Fatalf("SO_RCVBUFFORCE: %v", err)
	}
	return c
}

// sockopt runs set on the descriptor of c.
func sockopt(c *net.UDPConn, set func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = set(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// blast describes paced test traffic.
type blast struct {
	id      uint16        // first two payload bytes
	size    int           // UDP payload bytes per datagram (>= hdrLen)
	rateBps float64       // pace, in metered bits/s (payload + udpIPv4Overhead)
	count   int           // stop after this many datagrams
	dur     time.Duration // or after this long
	gso     int           // datagrams per UDP_SEGMENT write; 0 or 1: plain writes
}

// send sends b from c to dst and returns how many datagrams went out. It
// paces by the clock, a few datagrams at a time, and is bounded by count
// and duration.
func (b blast) send(c *net.UDPConn, dst netip.AddrPort) (int, error) {
	per := max(b.gso, 1)
	if per > 1 {
		if err := sockopt(c, func(fd int) error {
			return unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, b.size)
		}); err != nil {
			return 0, fmt.Errorf("UDP_SEGMENT: %w", err)
		}
	}
	buf := make([]byte, per*b.size)
	frameBits := float64(8 * (b.size + udpIPv4Overhead))
	start := time.Now()
	sent := 0
	for sent < b.count {
		elapsed := time.Since(start)
		if elapsed > b.dur {
			break
		}
		due := int(elapsed.Seconds() * b.rateBps / frameBits)
		if sent+per > due {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		n := min(per, b.count-sent)
		for i := range n {
			d := buf[i*b.size : (i+1)*b.size]
			binary.BigEndian.PutUint16(d, b.id)
			binary.BigEndian.PutUint64(d[seqOffset:], uint64(sent+i))
		}
		if _, err := c.WriteToUDPAddrPort(buf[:n*b.size], dst); err != nil {
			// A full send buffer is the sender outrunning tbf, not a
			// fault: UDP drops at the qdisc are silent by default.
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			return sent, err
		}
		sent += n
	}
	return sent, nil
}

// arrival is one received datagram.
type arrival struct {
	id   uint16
	seq  uint64
	size int
	at   time.Time
}

// receive collects datagrams on c until limit arrived, nothing arrived for
// idle once sent is closed (the sender is done: a sender that a busy
// machine pauses is not taken for one that stopped), or until deadline.
func receive(c *net.UDPConn, limit int, idle time.Duration, sent <-chan struct{}, deadline time.Time) ([]arrival, error) {
	got := make([]arrival, 0, limit)
	buf := make([]byte, 65536)
	for len(got) < limit {
		dl := time.Now().Add(idle)
		if dl.After(deadline) {
			dl = deadline
		}
		if err := c.SetReadDeadline(dl); err != nil {
			return got, err
		}
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			select {
			case <-sent:
				return got, nil
			default:
			}
			if time.Now().Before(deadline) {
				continue
			}
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if n < hdrLen {
			continue
		}
		got = append(got, arrival{
			id:   binary.BigEndian.Uint16(buf),
			seq:  binary.BigEndian.Uint64(buf[seqOffset:]),
			size: n,
			at:   time.Now(),
		})
	}
	return got, nil
}

// alreadySent is the sent signal of receive for a sender that has finished,
// or that the caller does not follow: silence ends the receiving at once.
var alreadySent = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// exchange sends b from src to dst's address while dst receives, and
// returns what arrived and how many were sent.
func exchange(t *testing.T, b blast, src, dst *net.UDPConn) ([]arrival, int) {
	t.Helper()
	type result struct {
		got []arrival
		err error
	}
	done := make(chan result, 1)
	finished := make(chan struct{})
	go func() {
		got, err := receive(dst, b.count, 500*time.Millisecond, finished, time.Now().Add(b.dur+30*time.Second))
		done <- result{got, err}
	}()
	sent, err := b.send(src, dst.LocalAddr().(*net.UDPAddr).AddrPort())
	close(finished)
	if err != nil {
		t.Fatalf("sending: %v (after %d datagrams)", err, sent)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("receiving: %v", r.err)
	}
	return r.got, sent
}

func containsStr(s, sub string) bool { return strings.Contains(s, sub) }
