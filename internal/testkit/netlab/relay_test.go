//go:build linux

package netlab

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sort"
	"testing"
	"time"
)

// The relay in a real lab, counted exactly: the model is replayed with the
// lab's seed to predict which datagrams are lost, duplicated or held, and
// an in-process receiver checks that exactly those were. Pass/fail checks
// hold on a busy machine (only lower bounds on delays); the timing-bound
// ones are LabOnly.

// relayTraffic is the test's stream: n Load PDU-like datagrams (loadPDUID,
// sequence number), each tenth followed by a Status PDU-like one
// (statusID), which no Load PDU scope selects, sent in Bursts of burst
// datagrams about every millisecond.
type relayTraffic struct {
	n, burst, size int
}

// sentAt are the send times of the Load PDU-like datagrams, by sequence.
type sentAt []time.Time

// run sends t from src to dst and returns the send times.
func (tr relayTraffic) run(t *testing.T, src, dst *net.UDPConn) sentAt {
	t.Helper()
	at := make(sentAt, tr.n)
	buf := make([]byte, tr.size)
	to := addrPort(dst)
	for i := 0; i < tr.n; i++ {
		binary.BigEndian.PutUint16(buf, loadPDUID)
		binary.BigEndian.PutUint64(buf[seqOffset:], uint64(i))
		at[i] = time.Now()
		if _, err := src.WriteToUDPAddrPort(buf, to); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			binary.BigEndian.PutUint16(buf, statusID)
			if _, err := src.WriteToUDPAddrPort(buf[:hdrLen], to); err != nil {
				t.Fatal(err)
			}
		}
		if i%tr.burst == tr.burst-1 {
			time.Sleep(time.Millisecond)
		}
	}
	return at
}

// seen is what the receiver made of the stream.
type seen struct {
	got     []arrival // Load PDU-like, in arrival order
	status  int       // Status PDU-like datagrams
	count   map[uint64]int
	ooo     []uint64 // arrived after a higher sequence number (the receiver's out-of-order)
	highest uint64
}

// receiveStream collects the stream on c until idle.
func receiveStream(t *testing.T, c *net.UDPConn, limit int) *seen {
	t.Helper()
	got, err := receive(c, limit, time.Second, alreadySent, time.Now().Add(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s := &seen{count: map[uint64]int{}}
	first := true
	for _, a := range got {
		if a.id == statusID {
			s.status++
			continue
		}
		s.got = append(s.got, a)
		s.count[a.seq]++
		if s.count[a.seq] > 1 {
			continue // a duplicate, not out of order
		}
		if !first && a.seq < s.highest {
			s.ooo = append(s.ooo, a.seq)
		} else {
			s.highest = a.seq
		}
		first = false
	}
	return s
}

// relayRun builds a lab with the relay impairing Up as m, sends tr from
// client to server and returns what arrived, what the model predicts for
// each datagram and the relay's counters.
func relayRun(t *testing.T, m Impairment, seed uint64, tr relayTraffic) (*seen, []fate, sentAt, RelayStats) {
	t.Helper()
	l := New(t, Config{Seed: seed, Up: Shape{Relay: m}})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	done := make(chan *seen, 1)
	go func() { done <- receiveStream(t, srv, 3*tr.n) }()
	sent := tr.run(t, cli, srv)
	s := <-done
	st, err := l.RelayStats(Up)
	if err != nil {
		t.Fatal(err)
	}
	norm, err := m.normalize()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("relay: %+v", st)
	if st.OwnDrops() != 0 {
		t.Fatalf("the relay dropped %d datagrams on its own: %+v", st.OwnDrops(), st)
	}
	if want := tr.n / 10; s.status != want {
		t.Errorf("%d of %d datagrams outside the scope arrived: the impairment touched them", s.status, want)
	}
	return s, fates(norm, seed, Up, tr.n), sent, st
}

func TestRelayLossIsExact(t *testing.T) {
	m := Impairment{Loss: GilbertElliott{P: 3, R: 30, LossBad: 100, LossGood: 0.5}}
	s, f, _, st := relayRun(t, m, 42, relayTraffic{n: 3000, burst: 20, size: 200})
	var want []uint64
	for i, x := range f {
		if x.lost {
			want = append(want, uint64(i))
		}
	}
	var missing []uint64
	for i := range uint64(len(f)) {
		if s.count[i] == 0 {
			missing = append(missing, i)
		}
	}
	if !slices.Equal(missing, want) {
		t.Errorf("lost %d datagrams %v\nthe model with seed 42 predicts %d: %v", len(missing), missing, len(want), want)
	}
	if st.Lost != int64(len(want)) || st.Matched != int64(len(f)) {
		t.Errorf("relay counted %d lost of %d matching, want %d of %d", st.Lost, st.Matched, len(want), len(f))
	}
	if len(s.ooo) != 0 || st.Reordered != 0 || st.Duplicated != 0 {
		t.Errorf("loss alone reordered (%d, relay %d) or duplicated (%d)", len(s.ooo), st.Reordered, st.Duplicated)
	}
	bursts := 0
	for i, x := range want {
		if i == 0 || want[i-1] != x-1 {
			bursts++
		}
	}
	t.Logf("%d lost in %d bursts", len(want), bursts)
	if bursts == 0 || len(want) < 2*bursts {
		t.Errorf("%d lost in %d bursts: the Bad state should make runs of about 3", len(want), bursts)
	}
}

func TestRelayDuplicatesAreExact(t *testing.T) {
	s, f, _, st := relayRun(t, Impairment{DupPct: 5}, 7, relayTraffic{n: 2000, burst: 20, size: 200})
	var want, twice []uint64
	for i, x := range f {
		if x.dup {
			want = append(want, uint64(i))
		}
		switch s.count[uint64(i)] {
		case 1:
		case 2:
			twice = append(twice, uint64(i))
		default:
			t.Errorf("datagram %d arrived %d times", i, s.count[uint64(i)])
		}
	}
	if !slices.Equal(twice, want) || st.Duplicated != int64(len(want)) {
		t.Errorf("duplicated %v (relay counted %d), the model predicts %v", twice, st.Duplicated, want)
	}
	if len(s.ooo) != 0 || st.Reordered != 0 {
		t.Errorf("duplicates read as %d out-of-order (relay %d)", len(s.ooo), st.Reordered)
	}
}

func TestRelayReorderIsExact(t *testing.T) {
	s, f, _, st := relayRun(t, Impairment{ReorderPct: 4, ReorderBy: 3 * time.Millisecond}, 9, relayTraffic{n: 3000, burst: 10, size: 200})
	for i := range len(f) {
		if s.count[uint64(i)] != 1 {
			t.Fatalf("datagram %d arrived %d times: reordering lost or duplicated", i, s.count[uint64(i)])
		}
	}
	// What the receiver saw out of order is what the relay counted, and
	// every one was held back by the model; one held back and not
	// overtaken (nothing sent within 3 ms after it) is in order.
	if int64(len(s.ooo)) != st.Reordered || st.Reordered == 0 {
		t.Errorf("receiver: %d out of order, relay: %d reordered", len(s.ooo), st.Reordered)
	}
	held := 0
	for _, q := range s.ooo {
		if !f[q].reorder {
			t.Errorf("datagram %d arrived out of order, the model did not hold it", q)
		}
	}
	for _, x := range f {
		if x.reorder {
			held++
		}
	}
	t.Logf("%d held back, %d overtaken", held, len(s.ooo))
	if st.Lost != 0 || st.Duplicated != 0 {
		t.Errorf("reordering lost %d or duplicated %d", st.Lost, st.Duplicated)
	}
}

// TestRelayDelay: every datagram spends at least the delay (minus the
// jitter) between the sender's write and the receiver's read, jitter never
// reorders, and a ping pong takes at least both directions' delays.
func TestRelayDelay(t *testing.T) {
	const d, j = 15 * time.Millisecond, 4 * time.Millisecond
	s, _, sent, st := relayRun(t, Impairment{Delay: d, Jitter: j}, 1, relayTraffic{n: 1000, burst: 10, size: 200})
	if len(s.got) != 1000 || len(s.ooo) != 0 || st.Reordered != 0 {
		t.Fatalf("%d of 1000 arrived, %d out of order (relay %d)", len(s.got), len(s.ooo), st.Reordered)
	}
	oneWay := make([]time.Duration, len(s.got))
	for i, a := range s.got {
		oneWay[i] = a.at.Sub(sent[a.seq])
		if oneWay[i] < d-j {
			t.Fatalf("datagram %d crossed in %v, below %v - %v", a.seq, oneWay[i], d, j)
		}
	}
	sort.Slice(oneWay, func(a, b int) bool { return oneWay[a] < oneWay[b] })
	t.Logf("one-way delay: min %v, median %v, p99 %v, max %v (relay late by %v on average, %v at most)",
		oneWay[0], oneWay[len(oneWay)/2], oneWay[len(oneWay)*99/100], oneWay[len(oneWay)-1], st.LateMean, st.LateMax)

	// Both directions, IPv4 and IPv6: a ping pong.
	up, down := 20*time.Millisecond, 5*time.Millisecond
	l := New(t, Config{Up: Shape{Relay: Impairment{Delay: up}}, Down: Shape{Relay: Impairment{Delay: down}}})
	for _, p := range families(l) {
		srv := listen(t, l, l.ServerNS, p[1])
		cli := listen(t, l, l.ClientNS, p[0])
		for i := range 5 {
			start := time.Now()
			send(t, cli, "ping", addrPort(srv))
			_, from, ok := recvFrom(t, srv, 5*time.Second)
			if !ok {
				t.Fatalf("%v: ping %d lost", p[1], i)
			}
			send(t, srv, "pong", from)
			if _, _, ok := recvFrom(t, cli, 5*time.Second); !ok {
				t.Fatalf("%v: pong %d lost", p[1], i)
			}
			if rtt := time.Since(start); rtt < up+down {
				t.Errorf("%v: round trip %v, below %v + %v", p[1], rtt, up, down)
			}
		}
	}
}

// TestRelayScope: under the Load PDU scope only unfragmented Load PDUs are
// impaired; a fragmented one and every other datagram pass. Impair changes
// the scope and the loss while the lab runs.
func TestRelayScope(t *testing.T) {
	l := New(t, Config{Up: Shape{Relay: Impairment{Loss: GilbertElliott{LossGood: 100}}}})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	try := func(id uint16, size int) bool {
		b := make([]byte, size)
		binary.BigEndian.PutUint16(b, id)
		send(t, cli, string(b), addrPort(srv))
		_, _, ok := recvFrom(t, srv, 300*time.Millisecond)
		return ok
	}
	check := func(phase string, want [3]bool) {
		t.Helper()
		got := [3]bool{try(loadPDUID, 1000), try(statusID, 1000), try(loadPDUID, 3000)}
		if got != want {
			t.Errorf("%s: Load PDU, other, fragmented Load PDU arrived %v, want %v", phase, got, want)
		}
	}
	check("Load PDU scope, 100 % loss", [3]bool{false, true, true})
	if err := l.Impair(Up, Impairment{Loss: GilbertElliott{LossGood: 100}, Scope: LossAllUDP}); err != nil {
		t.Fatal(err)
	}
	check("UDP scope, 100 % loss", [3]bool{false, false, false})
	if err := l.Impair(Up, Impairment{}); err != nil {
		t.Fatal(err)
	}
	check("no impairment", [3]bool{true, true, true})
	if err := l.Impair(Up, Impairment{DupPct: 200}); err == nil {
		t.Error("Impair accepted 200 % duplication")
	}
	if err := New(t, Config{}).Impair(Up, Impairment{Delay: time.Millisecond}); err == nil {
		t.Error("Impair without a relay in the path succeeded")
	}
}

// TestRelayCountsItsOwnDrops: a delay line too small for what is in
// flight drops the excess, counted as the relay's own drops, apart from
// what the impairment drops.
func TestRelayCountsItsOwnDrops(t *testing.T) {
	relaySlotsForTest = 16
	defer func() { relaySlotsForTest = 0 }()
	l := New(t, Config{Up: Shape{Relay: Impairment{Delay: 200 * time.Millisecond}}})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	payload := make([]byte, 100)
	for range 100 {
		send(t, cli, string(payload), addrPort(srv))
	}
	got, err := receive(srv, 100, time.Second, alreadySent, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.RelayStats(Up)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("received %d; relay %+v", len(got), st)
	if st.QueueFull == 0 || st.Lost != 0 {
		t.Fatalf("100 datagrams within 200 ms into 16 slots: %d counted as the relay's own drops, %d as loss", st.QueueFull, st.Lost)
	}
	if st.Read != 100 || st.Written+st.QueueFull != st.Read || st.OwnDrops() != st.QueueFull || int64(len(got)) != st.Written {
		t.Errorf("read %d (want 100) = written %d + queue full %d = received %d + dropped: does not hold", st.Read, st.Written, st.QueueFull, len(got))
	}
}

// TestSetRate: a rate step in the middle of a test changes tbf in place
// (its counters go on), a burst left at its default follows the rate, and
// only a shaped direction can step.
func TestSetRate(t *testing.T) {
	l := New(t, Config{Down: Shape{RateBps: 200e6}})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	exchange(t, blast{id: statusID, size: 1000, rateBps: 10e6, count: 50, dur: time.Second}, srv, cli)
	before, err := l.QdiscStats(Down)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetRate(Down, 50e6); err != nil {
		t.Fatal(err)
	}
	if c := l.Config().Down; c.RateBps != 50e6 || c.Burst != DefaultBurst(50e6, 1500) {
		t.Errorf("after the step: %+v", c)
	}
	out, err := l.Command(l.RouterNS, "tc", "-j", "qdisc", "show", "dev", routerClientDev).Output()
	if err != nil || !containsStr(string(out), fmt.Sprintf(`"rate":%d`, int64(50e6/8))) {
		t.Errorf("tc shows %s (%v), want the rate 50 Mbit/s (%d bytes/s)", out, err, int64(50e6/8))
	}
	exchange(t, blast{id: statusID, size: 1000, rateBps: 10e6, count: 50, dur: time.Second}, srv, cli)
	after, err := l.QdiscStats(Down)
	if err != nil {
		t.Fatal(err)
	}
	if after.Packets < before.Packets+50 {
		t.Errorf("tbf counters restarted: %d packets before the step, %d after 50 more", before.Packets, after.Packets)
	}
	if err := l.SetRate(Up, 10e6); err == nil {
		t.Error("SetRate stepped an unshaped direction")
	}
}

// TestCut: a cut path drops everything, counted, both ways; mended, it
// carries again.
func TestCut(t *testing.T) {
	l := New(t, Config{Relay: true})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	if err := l.Cut(true); err != nil {
		t.Fatal(err)
	}
	send(t, cli, "up", addrPort(srv))
	send(t, srv, "down", addrPort(cli))
	if _, _, ok := recvFrom(t, srv, 300*time.Millisecond); ok {
		t.Error("a datagram crossed the cut upwards")
	}
	if _, _, ok := recvFrom(t, cli, 300*time.Millisecond); ok {
		t.Error("a datagram crossed the cut downwards")
	}
	if n, err := l.CutDropped(); err != nil || n != 2 {
		t.Errorf("the cut counted %d drops (%v), want 2", n, err)
	}
	if err := l.Cut(false); err != nil {
		t.Fatal(err)
	}
	send(t, cli, "up", addrPort(srv))
	if _, _, ok := recvFrom(t, srv, 5*time.Second); !ok {
		t.Error("nothing crossed the mended path")
	}
}

// TestCutFor: a timed cut drops everything while it lasts and mends
// itself when its time is over, with nothing but the kernel's clock.
func TestCutFor(t *testing.T) {
	l := New(t, Config{Relay: true})
	srv := listen(t, l, l.ServerNS, l.ServerAddr)
	cli := listen(t, l, l.ClientNS, l.ClientAddr)
	const d = 1500 * time.Millisecond
	before := time.Now()
	if err := l.CutFor(d); err != nil {
		t.Fatal(err)
	}
	installed := time.Now()
	send(t, cli, "up", addrPort(srv))
	if _, _, ok := recvFrom(t, srv, 300*time.Millisecond); ok && time.Since(before) < d {
		t.Error("a datagram crossed the cut while it lasted")
	}
	// Past its end (measured from before it was installed, so surely
	// past), the path carries again without Cut(false).
	time.Sleep(time.Until(before.Add(d + 100*time.Millisecond)))
	send(t, cli, "up", addrPort(srv))
	if _, _, ok := recvFrom(t, srv, 5*time.Second); !ok {
		t.Errorf("nothing crossed %v after a cut of %v (installed within %v)", time.Since(before).Round(time.Millisecond), d, installed.Sub(before).Round(time.Millisecond))
	}
	if n, err := l.CutDropped(); err != nil || n < 1 {
		t.Errorf("the cut counted %d drops (%v), want at least 1", n, err)
	}
	if err := l.Cut(false); err != nil {
		t.Fatal(err)
	}
	if err := l.CutFor(0); err == nil {
		t.Error("CutFor(0) was taken")
	}
}
