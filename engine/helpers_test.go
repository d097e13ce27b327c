package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
)

// Test helpers. A SendBuffer's slot writer is unexported in dataphase, but
// Slot(i) returns the HdrLen bytes of slot i once Dgrams[i].HdrLen is set,
// and those can be written.

const testHdrLen = 32

// fillPlan writes a plan of datagrams of the given lengths into b: datagram
// i carries tag, then seq+i big-endian, then its length, then a pattern.
func fillPlan(b *dataphase.SendBuffer, tag byte, seq uint32, lens ...int) {
	b.N = len(lens)
	for i, l := range lens {
		h := min(testHdrLen, l)
		b.Dgrams[i] = dataphase.OutDatagram{HdrLen: uint16(h), Len: uint16(l)}
		writeHdr(b.Slot(i), tag, seq+uint32(i), l)
	}
}

func writeHdr(p []byte, tag byte, seq uint32, l int) {
	var full [testHdrLen]byte
	full[0] = tag
	binary.BigEndian.PutUint32(full[1:], seq)
	binary.BigEndian.PutUint32(full[5:], uint32(l))
	for j := 9; j < testHdrLen; j++ {
		full[j] = byte(j)
	}
	copy(p, full[:])
}

// checkHdr verifies what writeHdr wrote and returns the sequence number.
func checkHdr(t *testing.T, p []byte, tag byte, l int) uint32 {
	t.Helper()
	var want [testHdrLen]byte
	seq := binary.BigEndian.Uint32(p[1:])
	writeHdr(want[:], tag, seq, l)
	h := min(testHdrLen, l)
	if string(p[:h]) != string(want[:h]) {
		t.Fatalf("header %x, want %x", p[:h], want[:h])
	}
	return seq
}

// lens returns n copies of l followed by extra.
func lens(n, l int, extra ...int) []int { return append(repeat(n, l), extra...) }

// openPair opens two sockets on addr (port 0) and connects them to each
// other.
func openPair(t testing.TB, addr string, o SocketOptions) (a, b *Socket) {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	a = mustOpen(t, ap, o)
	b = mustOpen(t, ap, o)
	mustConnect(t, a, b.LocalAddr())
	mustConnect(t, b, a.LocalAddr())
	return a, b
}

func mustOpen(t testing.TB, ap netip.AddrPort, o SocketOptions) *Socket {
	t.Helper()
	s, err := OpenUDP(ap, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustConnect(t testing.TB, s *Socket, peer netip.AddrPort) {
	t.Helper()
	if err := s.Connect(peer); err != nil {
		t.Fatal(err)
	}
}

// loopbackOf returns the loopback address a peer of s reaches it at.
func loopbackOf(s *Socket) netip.AddrPort {
	a := s.LocalAddr()
	if a.Addr().IsUnspecified() {
		if a.Addr().Is4() {
			return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), a.Port())
		}
		return netip.AddrPortFrom(netip.IPv6Loopback(), a.Port())
	}
	return a
}

// recvAll reads with RecvBatch until want datagrams came or
// await.Deadline passed, calling f for each batch.
func recvAll(t *testing.T, s *Socket, b *dataphase.RecvBatch, want int, f func(b *dataphase.RecvBatch)) int {
	t.Helper()
	got := 0
	end := time.Now().Add(await.Deadline)
	for got < want && time.Now().Before(end) {
		if err := s.RecvBatch(b, dataphase.MaxRecv); err != nil {
			t.Fatal(err)
		}
		if b.N == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		got += b.N
		f(b)
	}
	return got
}

// receiveSlack bounds the error of a kernel receive time (CLOCK_REALTIME)
// converted to the Test Time Base through a clock pair read age after the
// datagram arrived: the pair's own width (a few µs; 50 allowed), and how
// far the two clocks ran apart over age, since NTP slews the wall clock
// and not the raw one (5000 ppm seen on a VM; 1 % allowed). A datagram a
// busy machine reads late is no less exact for it.
func receiveSlack(age clock.Time) clock.Time {
	return clock.Time(50*time.Microsecond) + max(age, 0)/100
}

// hasIPv6 reports whether ::1 can be bound.
func hasIPv6(t testing.TB) bool {
	s, err := OpenUDP(netip.MustParseAddrPort("[::1]:0"), SocketOptions{Family: 6})
	if err != nil {
		return false
	}
	s.Close()
	return true
}
