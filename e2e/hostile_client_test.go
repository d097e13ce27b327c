//go:build linux

package e2e

// Hostile datagrams at a client, attacked for real: an
// attacker who knows a Test Connection's 4-tuple forges the server's
// Status PDUs to the client during a real upstream test. The client drops
// those whose figures cannot be true (dataphase/plausible.go) and keeps
// the real ones that follow. UDPSTP_BEFORE_BIN runs main's binary first
// for the before figures of docs/security.md (hostile_data_test.go).

import (
	"net/netip"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// forgedFlood is how many forged Status PDUs follow the first one.
const forgedFlood = 99

// TestHostileForgedStatusToClient: during a 6 s upstream test at row 5
// (5 Mbit/s), an on-path attacker in the router reads the Test
// Connection's 4-tuple and sends the client, from the server's address and
// test port, the forged Status PDU (Sub-Interval 4,000,000,000 at
// 10,224 Mbit/s), then 99 more reporting the next Sub-Interval at 10 Gbit/s.
// The client's JSON must show all 6 Sub-Intervals, none above twice the
// row's rate, and say how many it dropped. Before this defence the first
// one was reported as a 10,224 Mbit/s Sub-Interval and every real one
// after it was dropped.
func TestHostileForgedStatusToClient(t *testing.T) {
	forEachBin(t, forgedStatusToClientCase)
}

func forgedStatusToClientCase(t *testing.T, b hostileBin) {
	const secs, row = 6, 5
	l, cl, client, server, started := clientUnderAttack(t, b, secs, "-u", "-I", strconv.Itoa(row))
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	seq := uint32(time.Since(started) / (50 * time.Millisecond)) // about the server's Status PDU number
	s := dataphase.StatusPDU{
		SeqNo: seq, Rate: table[row], SubIntSeqNo: 4_000_000_000,
		SubInt: dataphase.SubIntervalStats{RxDatagrams: 1_045_827, RxBytes: 1_278_000_000, DeltaTime: 1_000_000,
			AccumTime: 3000, DelayVarMin: dataphase.NoDelay, RTTVarMin: dataphase.NoDelay},
		RTTMinimum: dataphase.NoDelay, RTTVarSample: dataphase.NoDelay, DelayVarMin: dataphase.NoDelay,
		TiDeltaTime: 50_000,
	}
	pdu := make([]byte, dataphase.StatusLen)
	forged := 0
	for i := 0; i <= forgedFlood; i++ {
		if i > 0 {
			// The next Sub-Interval, 10 Gbit/s.
			s.SubIntSeqNo, s.SubInt.RxBytes, s.SubInt.RxDatagrams = 3, 1_250_000_000, 1_022_913
		}
		n := s.Encode(pdu, false)
		if err := l.ForgeUDP(l.RouterNS, server, client, pdu[:n]); err != nil {
			t.Fatal(err)
		}
		forged++
		time.Sleep(time.Millisecond) // paced, so that the path's queues keep them
	}
	r := cl.wait(t, 40*time.Second)
	maxMbps := 0.0
	for _, sub := range r.Output.IncrementalResult {
		maxMbps = max(maxMbps, sub.IPLayerCapacity)
	}
	dropped := droppedAsForged(r.ErrorMessage + " " + r.ErrorMessage2)
	t.Logf("%s: %d forged Status PDUs from %v to %v; client ErrorStatus %d, %d Sub-Intervals, the highest %.2f Mbit/s, %d dropped as forged (%q)",
		b.name, forged, server, client, r.ErrorStatus, len(r.Output.IncrementalResult), maxMbps, dropped, r.ErrorMessage)
	if !b.check {
		return
	}
	if r.ErrorStatus != dataphase.WarnImplausible || len(r.Output.IncrementalResult) != secs {
		t.Errorf("ErrorStatus %d %q, %d Sub-Intervals: want %d (the warning) and all %d", r.ErrorStatus, r.ErrorMessage,
			len(r.Output.IncrementalResult), dataphase.WarnImplausible, secs)
	}
	if maxMbps > 2*row {
		t.Errorf("a Sub-Interval of %.2f Mbit/s in a %d Mbit/s test", maxMbps, row)
	}
	if dropped < 1 || dropped > forged {
		t.Errorf("%d dropped as forged of %d forged: %q / %q", dropped, forged, r.ErrorMessage, r.ErrorMessage2)
	}
}

// TestHostileForgedLoadToClient: during a 6 s downstream test at row 5
// (1,000 Load PDUs a second), the attacker sends the client, from the
// server's address and test port, 10 Load PDUs numbered 2^30 (taken, each
// is a loss of a billion datagrams and makes every real one after it a
// late arrival), then 10 numbered a few seconds ahead that echo a Status
// PDU time a minute old, which the client never sent (taken, an RTT of a
// minute). The client's JSON must show all 6 Sub-Intervals with the path's
// real loss (none here; under a thousand is the bound) and RTT (under
// 30 s is the bound), and say how many it dropped.
func TestHostileForgedLoadToClient(t *testing.T) {
	forEachBin(t, forgedLoadToClientCase)
}

func forgedLoadToClientCase(t *testing.T, b hostileBin) {
	const secs, row = 6, 5
	l, cl, client, server, started := clientUnderAttack(t, b, secs, "-d", "-I", strconv.Itoa(row))
	pdu := make([]byte, dataphase.DefaultPayload)
	forged := 0
	for i := 0; i < 20; i++ {
		h := dataphase.LoadHeader{SeqNo: 1<<30 + uint32(i), UDPPayload: uint16(len(pdu))}
		now := time.Now()
		h.LpduTimeSec, h.LpduTimeNsec = clock.Split(now.UnixNano())
		if i >= 10 {
			h.SeqNo = uint32(now.Sub(started)/time.Millisecond) + 3000 + uint32(i)
			h.SpduTimeSec, h.SpduTimeNsec = clock.Split(now.Add(-time.Minute).UnixNano())
		}
		h.Encode(pdu)
		if err := l.ForgeUDP(l.RouterNS, server, client, pdu); err != nil {
			t.Fatal(err)
		}
		forged++
		time.Sleep(time.Millisecond)
	}
	r := cl.wait(t, 40*time.Second)
	var loss uint64
	rttMax := 0.0
	for _, sub := range r.Output.IncrementalResult {
		loss += uint64(sub.LossCount)
		rttMax = max(rttMax, sub.RTTMax)
	}
	dropped := droppedAsForged(r.ErrorMessage + " " + r.ErrorMessage2)
	t.Logf("%s: %d forged Load PDUs from %v to %v; client ErrorStatus %d, %d Sub-Intervals, loss %d (summary %d, reordered %d), RTT max %.3f s, %d dropped as forged (%q)",
		b.name, forged, server, client, r.ErrorStatus, len(r.Output.IncrementalResult), loss, r.Output.Summary.LossCount,
		r.Output.Summary.ReorderedCount, rttMax, dropped, r.ErrorMessage)
	if !b.check {
		return
	}
	if r.ErrorStatus != dataphase.WarnImplausible || len(r.Output.IncrementalResult) != secs {
		t.Errorf("ErrorStatus %d %q, %d Sub-Intervals: want %d (the warning) and all %d", r.ErrorStatus, r.ErrorMessage,
			len(r.Output.IncrementalResult), dataphase.WarnImplausible, secs)
	}
	if loss >= 1000 || r.Output.Summary.LossCount >= 1000 {
		t.Errorf("a loss of %d datagrams (summary %d) in a test without loss", loss, r.Output.Summary.LossCount)
	}
	if rttMax >= 30 {
		t.Errorf("an RTT of %.3f s", rttMax)
	}
	if dropped < 1 || dropped > forged {
		t.Errorf("%d dropped as forged of %d forged: %q / %q", dropped, forged, r.ErrorMessage, r.ErrorMessage2)
	}
}

// clientUnderAttack starts bin's server and a secs-second client test
// with args in a fresh lab, reads the Test Connection's 4-tuple as an
// attacker on the path sees it, and returns 2 s into the test (with
// Sub-Intervals 1 and 2 done: the wait makes the attack land mid-test,
// nothing is judged by it), with when the server started it.
func clientUnderAttack(t *testing.T, b hostileBin, secs int, args ...string) (l *netlab.Lab, cl *hostileClient, client, server netip.AddrPort, started time.Time) {
	t.Helper()
	l = dataLab(t)
	srv := hostileServer(t, l, b.path)
	cl = startHostileClient(t, l, b.path, secs, args...)
	if srv.findLine("test started", 10*time.Second) == "" {
		t.Fatalf("no test started:\n%s", srv.log())
	}
	started = time.Now()
	var err error
	if !await.Within(10*time.Second, func() bool {
		client, server, err = clientTestConnection(l)
		return err == nil
	}) {
		t.Fatal(err)
	}
	time.Sleep(2*time.Second - time.Since(started))
	return l, cl, client, server, started
}

var droppedRE = regexp.MustCompile(`(\d+) (?:Status|Load) PDUs dropped so far as forged`)

// droppedAsForged is the highest count of the client's warnings about
// dropped PDUs in s (0: none).
func droppedAsForged(s string) int {
	n := 0
	for _, m := range droppedRE.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	return n
}
