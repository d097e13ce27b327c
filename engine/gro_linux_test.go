//go:build !portable

package engine

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/race"
)

// The GSO messages of these tests: 40 segments of 1,000 bytes and a
// 300-byte tail, 41 datagrams, each starting with its sequence number.
const (
	groTestSegs = 40
	groTestSeg  = 1000
	groTestTail = 300
	groTestMsg  = groTestSegs + 1
)

// groTestLen is the length of datagram seq of such messages.
func groTestLen(seq uint32) int {
	if seq%groTestMsg == groTestSegs {
		return groTestTail
	}
	return groTestSeg
}

// sendGSOMessages sends msgs GSO messages of groTestMsg datagrams from a,
// sequence numbers from seq on, and checks the kernel took them as GSO
// messages.
func sendGSOMessages(t *testing.T, a *Socket, seq uint32, msgs int) {
	t.Helper()
	if !a.GSOEnabled() {
		t.Skip("no UDP GSO on this kernel: nothing to merge")
	}
	const perPlan = dataphase.MaxPlan / groTestMsg
	for msgs > perPlan {
		sendGSOPlan(t, a, seq, perPlan)
		seq, msgs = seq+perPlan*groTestMsg, msgs-perPlan
	}
	sendGSOPlan(t, a, seq, msgs)
}

// sendGSOPlan sends msgs GSO messages in one SendBatch.
func sendGSOPlan(t *testing.T, a *Socket, seq uint32, msgs int) {
	t.Helper()
	var sb dataphase.SendBuffer
	var ls []int
	for range msgs {
		ls = append(ls, lens(groTestSegs, groTestSeg, groTestTail)...)
	}
	sb.N = len(ls)
	for i, l := range ls {
		sb.Dgrams[i] = dataphase.OutDatagram{HdrLen: testHdrLen, Len: uint16(l)}
		p := sb.Slot(i)
		binary.BigEndian.PutUint32(p, seq+uint32(i))
		for j := 4; j < testHdrLen; j++ {
			p[j] = byte(j)
		}
	}
	before := a.Stats().Counts[CountGSOMessages]
	if sent, err := a.SendBatch(&sb); err != nil || sent != len(ls) {
		t.Fatalf("sent %d of %d: %v", sent, len(ls), err)
	}
	if n := a.Stats().Counts[CountGSOMessages] - before; n != uint64(msgs) {
		t.Fatalf("%d GSO messages sent, want %d", n, msgs)
	}
}

// seqReader reads one socket's datagrams of sendGSOMessages, checking
// that each comes once, in order, whole.
type seqReader struct {
	s       *Socket
	next    uint32 // the sequence number expected next
	first   uint32 // of the message being read
	msgTime int64  // receive time of its first datagram
	tos     uint8  // expected on every datagram, if set
	oneTime bool   // a message's datagrams share its receive time (GRO)
	batches []int  // batch sizes
}

// read runs one recvBatch of at most limit datagrams with scratch g and
// checks what came.
func (r *seqReader) read(t *testing.T, b *dataphase.RecvBatch, limit int, g *groScratch) {
	t.Helper()
	if err := r.s.recvBatch(b, limit, nil, g); err != nil {
		t.Fatal(err)
	}
	if b.N == 0 {
		return
	}
	r.batches = append(r.batches, b.N)
	for i := 0; i < b.N; i++ {
		d := b.Dgrams[i]
		p := b.Data(i)
		seq := binary.BigEndian.Uint32(p)
		if seq != r.next {
			t.Fatalf("%v: datagram %d of the batch is %d, want %d (batches %v)", r.s.LocalAddr(), i, seq, r.next, r.batches)
		}
		if d.Len != groTestLen(seq) || len(p) != min(d.Len, dataphase.RecvSlotLen) {
			t.Fatalf("datagram %d: length %d, kept %d", seq, d.Len, len(p))
		}
		for j := 4; j < testHdrLen; j++ {
			if p[j] != byte(j) {
				t.Fatalf("datagram %d: byte %d is %#x", seq, j, p[j])
			}
		}
		for j := testHdrLen; j < len(p); j++ {
			if p[j] != 0 {
				t.Fatalf("datagram %d: filler byte %d is %#x", seq, j, p[j])
			}
		}
		if r.tos != 0 && (!d.HasTOS || d.TOS != r.tos) {
			t.Fatalf("datagram %d: TOS %#x (has %v), want %#x", seq, d.TOS, d.HasTOS, r.tos)
		}
		// One timestamp for a message: every datagram of it has its
		// first one's time.
		if seq%groTestMsg == 0 {
			r.first, r.msgTime = seq, int64(d.Time)
		} else if r.oneTime && int64(d.Time) != r.msgTime {
			t.Fatalf("datagram %d: time %d, its message's (from %d) %d", seq, d.Time, r.first, r.msgTime)
		}
		r.next++
	}
}

// readUntil reads until want datagrams came or await.Deadline passed.
func (r *seqReader) readUntil(t *testing.T, b *dataphase.RecvBatch, limit int, g *groScratch, want uint32) {
	t.Helper()
	end := time.Now().Add(await.Deadline)
	for r.next < want && time.Now().Before(end) {
		r.read(t, b, limit, g)
		if b.N == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if r.next != want {
		t.Fatalf("%v: read %d datagrams of %d (batches %v)", r.s.LocalAddr(), r.next, want, r.batches)
	}
}

// groOn checks that the kernel took UDP_GRO on s, and skips the test with
// the reason if it did not.
func groOn(t *testing.T, s *Socket) {
	t.Helper()
	if !s.GROEnabled() {
		if err := setGRO(s.Fd()); err != nil {
			t.Skipf("this kernel refuses UDP_GRO (%v): the GRO path cannot run here", err)
		}
		t.Fatal("UDP_GRO works on this kernel, yet the socket has it off")
	}
	if v, err := unix.GetsockoptInt(s.Fd(), unix.IPPROTO_UDP, unix.UDP_GRO); err != nil || v != 1 {
		t.Fatalf("getsockopt UDP_GRO: %d, %v", v, err)
	}
	if !s.Stats().GRO {
		t.Fatal("GROEnabled, yet Stats says GRO off")
	}
}

// Three GSO messages of 41 datagrams arrive whole at a GRO socket and are
// read back as 123 datagrams, in batches of 50, so that a message
// straddles two batches: each once, in order, with its length, its bytes,
// the message's TOS and one time per message.
func TestGROReadsGSOMessages(t *testing.T) {
	for _, fam := range []struct {
		name, addr string
		o          SocketOptions
		ipv4       bool
	}{
		{"IPv4", "127.0.0.1:0", SocketOptions{}, true},
		{"IPv6", "[::1]:0", SocketOptions{Family: 6}, false},
	} {
		t.Run(fam.name, func(t *testing.T) {
			if !fam.ipv4 && !hasIPv6(t) {
				t.Skip("no IPv6")
			}
			ap := netip.MustParseAddrPort(fam.addr)
			o := fam.o
			o.SockBuf = 4 << 20
			a := mustOpen(t, ap, o)
			o.GRO = true
			b := mustOpen(t, ap, o)
			mustConnect(t, a, b.LocalAddr())
			mustConnect(t, b, a.LocalAddr())
			groOn(t, b)
			const tos = 0xb8
			if err := a.SetTOS(tos, fam.ipv4); err != nil {
				t.Fatal(err)
			}
			if err := b.EnableRecvTOS(fam.ipv4); err != nil {
				t.Fatal(err)
			}
			const msgs = 3
			sendGSOMessages(t, a, 0, msgs)
			var g groScratch
			var rb dataphase.RecvBatch
			r := &seqReader{s: b, tos: tos, oneTime: true}
			const limit = 50
			r.readUntil(t, &rb, limit, &g, msgs*groTestMsg)
			for i, n := range r.batches[:len(r.batches)-1] {
				if n != limit {
					t.Fatalf("batch %d of %d datagrams, though more were waiting (batches %v)", i, n, r.batches)
				}
			}
			st := b.Stats()
			if st.Counts[CountGROMessages] != msgs || st.Counts[CountRecvDatagrams] != msgs*groTestMsg {
				t.Fatalf("GRO messages %d, datagrams %d; want %d, %d (the kernel cut them up?)",
					st.Counts[CountGROMessages], st.Counts[CountRecvDatagrams], msgs, msgs*groTestMsg)
			}
			if b.sys.rest.pending() || b.sys.ownGRO.m != nil {
				t.Fatal("a remainder is left, or the socket made scratch buffers of its own")
			}
			t.Logf("batches %v, %d receive calls", r.batches, st.Counts[CountRecvCalls])
		})
	}
}

// Two GRO sockets read in turn with one scratch and one batch, as an
// Engine Thread reads its sockets: what one read leaves of a message is
// the socket's, and the other socket's read, which reuses the message
// buffers, does not touch it.
func TestGROSharedScratch(t *testing.T) {
	var rs []*seqReader
	for range 2 {
		a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20})
		b := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20, GRO: true})
		mustConnect(t, a, b.LocalAddr())
		mustConnect(t, b, a.LocalAddr())
		groOn(t, b)
		sendGSOMessages(t, a, 0, 4)
		rs = append(rs, &seqReader{s: b, oneTime: true})
	}
	var g groScratch
	var rb dataphase.RecvBatch
	const want = 4 * groTestMsg
	end := time.Now().Add(await.Deadline)
	for (rs[0].next < want || rs[1].next < want) && time.Now().Before(end) {
		idle := true
		for _, r := range rs {
			// 30 leaves 11 of the first message, 19 of the second and so
			// on for the socket's next read.
			r.read(t, &rb, 30, &g)
			if rb.N > 0 {
				idle = false
			}
		}
		if idle {
			time.Sleep(time.Millisecond)
		}
	}
	for i, r := range rs {
		if r.next != want {
			t.Fatalf("socket %d: %d datagrams of %d (batches %v)", i, r.next, want, r.batches)
		}
		if n := r.s.Stats().Counts[CountGROMessages]; n != 4 {
			t.Fatalf("socket %d: %d GRO messages, want 4", i, n)
		}
	}
}

// Datagrams sent one by one reach a GRO socket as messages without a
// segment size: each is one datagram, as without GRO (loopback does no
// receive-side GRO).
func TestGROPlainDatagrams(t *testing.T) {
	a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20, NoGSO: true})
	b := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20, GRO: true})
	mustConnect(t, a, b.LocalAddr())
	mustConnect(t, b, a.LocalAddr())
	groOn(t, b)
	ls := []int{100, 1222, 1222, 1222, 40, 9000, maxIPv4Payload, 0, 500}
	var sb dataphase.SendBuffer
	fillPlan(&sb, 3, 0, ls...)
	if sent, err := a.SendBatch(&sb); err != nil || sent != len(ls) {
		t.Fatalf("sent %d: %v", sent, err)
	}
	var g groScratch
	var rb dataphase.RecvBatch
	var got []int
	end := time.Now().Add(await.Deadline)
	for len(got) < len(ls) && time.Now().Before(end) {
		if err := b.recvBatch(&rb, dataphase.MaxRecv, nil, &g); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < rb.N; i++ {
			l := rb.Dgrams[i].Len
			if l >= 5 {
				if seq := checkHdr(t, rb.Data(i), 3, l); int(seq) != len(got) {
					t.Fatalf("datagram %d has sequence %d", len(got), seq)
				}
			}
			got = append(got, l)
		}
		if rb.N == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if len(got) != len(ls) {
		t.Fatalf("lengths %v, want %v", got, ls)
	}
	for i := range ls {
		if got[i] != ls[i] {
			t.Fatalf("lengths %v, want %v", got, ls)
		}
	}
	if n := b.Stats().Counts[CountGROMessages]; n != 0 {
		t.Fatalf("%d GRO messages of plain datagrams", n)
	}
}

// Without the option, and when the kernel refuses it, the socket reads as
// it always did: GSO messages arrive cut up by the kernel, one datagram a
// message, and the stats say GRO is off.
func TestGROOffAndRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		gro     bool
		refused bool
	}{
		{"not asked", false, false},
		{"refused", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			bo := SocketOptions{SockBuf: 4 << 20, GRO: c.gro}
			if c.refused {
				bo.setGRO = func(int) error { calls++; return unix.ENOPROTOOPT }
			}
			a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20})
			b := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), bo)
			mustConnect(t, a, b.LocalAddr())
			mustConnect(t, b, a.LocalAddr())
			if c.refused && calls != 1 {
				t.Fatalf("setsockopt UDP_GRO tried %d times", calls)
			}
			if b.GROEnabled() || b.Stats().GRO {
				t.Fatal("GRO reported on")
			}
			if v, err := unix.GetsockoptInt(b.Fd(), unix.IPPROTO_UDP, unix.UDP_GRO); err == nil && v != 0 {
				t.Fatalf("UDP_GRO is %d on the socket", v)
			}
			sendGSOMessages(t, a, 0, 2)
			var g groScratch
			var rb dataphase.RecvBatch
			r := &seqReader{s: b}
			r.readUntil(t, &rb, 50, &g, 2*groTestMsg)
			st := b.Stats()
			if st.Counts[CountGROMessages] != 0 || g.m != nil || b.sys.ownGRO.m != nil {
				t.Fatalf("the GRO path ran: %d GRO messages, scratch %v", st.Counts[CountGROMessages], g.m != nil)
			}
		})
	}
}

// A GRO read allocates nothing once the executor's scratch and the
// socket's remainder exist, a message straddling the batch included.
func TestGROReadAllocs(t *testing.T) {
	a := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20})
	b := mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20, GRO: true})
	mustConnect(t, a, b.LocalAddr())
	mustConnect(t, b, a.LocalAddr())
	groOn(t, b)
	var sb dataphase.SendBuffer
	fillPlan(&sb, 5, 0, lens(groTestSegs, groTestSeg, groTestTail)...)
	var g groScratch
	var rb dataphase.RecvBatch
	var clk turnClock
	clk.read()
	got := 0
	step := func() {
		if sent, err := a.SendBatch(&sb); err != nil || sent != groTestMsg {
			t.Fatalf("sent %d: %v", sent, err)
		}
		// 30 and then 11 of the message: the second read starts with the
		// remainder. Loopback delivers within the send.
		for range 3 {
			if err := b.recvBatch(&rb, 30, &clk, &g); err != nil {
				t.Fatal(err)
			}
			got += rb.N
		}
	}
	for range 5 {
		step()
	}
	allocs := race.AllocsPerRun(100, step)
	const want = 106 * groTestMsg
	for end := time.Now().Add(await.Deadline); got < want && time.Now().Before(end); {
		if err := b.recvBatch(&rb, 30, &clk, &g); err != nil {
			t.Fatal(err)
		}
		got += rb.N
		if rb.N == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if got != want {
		t.Fatalf("read %d datagrams, want %d", got, want)
	}
	if n := b.Stats().Counts[CountGROMessages]; n != 106 {
		t.Fatalf("%d GRO messages, want 106", n)
	}
	if allocs != 0 {
		t.Fatalf("a GRO read allocates %v times", allocs)
	}
}

// Both executors read a GRO socket with their own scratch, not one of
// the socket's.
func TestGROExecutorScratch(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	open := func(t *testing.T) (a, b *Socket) {
		a = mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20, GRO: true})
		b = mustOpen(t, netip.MustParseAddrPort("127.0.0.1:0"), SocketOptions{SockBuf: 4 << 20})
		mustConnect(t, a, b.LocalAddr())
		mustConnect(t, b, a.LocalAddr())
		groOn(t, a)
		return a, b
	}
	const msgs = 7 // 287 datagrams: more than a turn's read
	want := int64(msgs * groTestMsg)
	t.Run("pool", func(t *testing.T) {
		th := newTestThread(t, PoolOptions{Threads: 1})
		a, b := open(t)
		core := newFakeCore(time.Millisecond, 0) // its sends bound the waits
		addTestConn(th, a, core, nil)
		sendGSOMessages(t, b, 0, msgs)
		end := time.Now().Add(await.Deadline)
		for core.received.Load() < want && time.Now().Before(end) {
			if !th.turn() {
				th.waitTurn()
			}
		}
		if core.received.Load() != want || th.gro.m == nil || a.sys.ownGRO.m != nil {
			t.Fatalf("received %d of %d; thread scratch %v, socket scratch %v", core.received.Load(), want, th.gro.m != nil, a.sys.ownGRO.m != nil)
		}
	})
	t.Run("conn", func(t *testing.T) {
		a, b := open(t)
		core := newFakeCore(time.Millisecond, 0)
		c := newConn(a, core, nil, nil)
		defer c.wk.Close()
		sendGSOMessages(t, b, 0, msgs)
		end := time.Now().Add(await.Deadline)
		for core.received.Load() < want && time.Now().Before(end) {
			if c.turn() {
				c.readable = true
			} else {
				c.waitTurn()
			}
		}
		if core.received.Load() != want || c.gro.m == nil || a.sys.ownGRO.m != nil {
			t.Fatalf("received %d of %d; executor scratch %v, socket scratch %v", core.received.Load(), want, c.gro.m != nil, a.sys.ownGRO.m != nil)
		}
	})
}
