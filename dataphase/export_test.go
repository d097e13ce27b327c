package dataphase

import (
	"testing"
	"time"

	"github.com/udpstp/udpstp/clock"
)

// exportConn is a downstream client's Load Receiver exporting into e.
func exportConn(e *Export) (*Conn, clock.Pair) {
	p := Params{TestIntTime: 10 * time.Second, TrialInt: 50 * time.Millisecond, SubIntPeriod: time.Second,
		SRIndexConf: AutoRateIndex, InitialRate: SendingRate{TxInterval2: 50000, UDPAddon2: 1222 | RandomSize}}
	now := clock.Pair{Mono: 1e9, Wall: 1796009000e9}
	c := NewConn(p, now)
	c.SetExport(e)
	return c, now
}

// sentStatus makes c remember Status PDUs sent at the times echo: a
// client drops a Load PDU echoing a time it never sent (plausible.go).
func sentStatus(c *Conn, echo []int64) {
	for _, e := range echo {
		c.pl.statusSent(e)
	}
}

// loadBatch fills b with Load PDUs of the given sequence numbers, each
// echoing Status PDU time echo[i] (ns), sent 3 ms before now.
func loadBatch(b *RecvBatch, now clock.Pair, seqs []uint32, echo []int64) {
	b.Pair = now
	for i, s := range seqs {
		h := LoadHeader{SeqNo: s, UDPPayload: 1222, RTTRespDelay: 2, SpduSeqErr: uint16(i % 2)}
		h.SpduTimeSec, h.SpduTimeNsec = clock.Split(echo[i])
		h.LpduTimeSec, h.LpduTimeNsec = clock.Split(now.Wall - 3_400_000)
		h.Encode(b.Buf(i))
		b.Dgrams[i] = InDatagram{Len: 1222, Time: now.Mono}
	}
	b.N = len(seqs)
}

// TestExportRows: without '+' only Load PDUs with an RTT sample make a row
// (a newly echoed Status PDU time), with '+' every accepted one, the RTT
// columns empty for the others: in order, duplicates and late arrivals.
func TestExportRows(t *testing.T) {
	w := int64(1796009000e9)
	seqs := []uint32{1, 2, 3, 3, 5, 4, 6}
	echo := []int64{w - 10e6, w - 10e6, w - 8e6, w - 8e6, w - 8e6, w - 8e6, w - 5e6}
	for _, all := range []bool{false, true} {
		e := NewExport(all, 16)
		c, now := exportConn(e)
		sentStatus(c, echo)
		var b RecvBatch
		loadBatch(&b, now, seqs, echo)
		c.Receive(&b)
		var rows []ExportRow
		e.Drain(func(r *ExportRow) { rows = append(rows, *r) })
		wantSeq := []uint32{1, 3, 6}
		if all {
			wantSeq = seqs
		}
		if len(rows) != len(wantSeq) {
			t.Fatalf("all=%v: %d rows, want %d: %+v", all, len(rows), len(wantSeq), rows)
		}
		for i, r := range rows {
			if r.SeqNo != wantSeq[i] || r.Payload != 1222 || r.OWD != 3 || r.DstRx != now.Wall {
				t.Errorf("all=%v row %d: %+v", all, i, r)
			}
			rtt := !all || i == 0 || i == 2 || i == 6
			if r.HasRTT != rtt {
				t.Errorf("all=%v row %d (seq %d): HasRTT %v", all, i, r.SeqNo, r.HasRTT)
			}
			if r.HasRTT && (r.RespDelay != 2 || r.RTT != uint32(roundMs(now.Wall-clock.Join(r.RTTSec, r.RTTNsec)))-2) {
				t.Errorf("all=%v row %d: RTT %d with response delay %d", all, i, r.RTT, r.RespDelay)
			}
		}
		if n := e.Drain(func(*ExportRow) {}); n != 0 {
			t.Errorf("a second drain found %d rows", n)
		}
	}
}

// TestExportFullRingDrops: a writer that falls behind loses rows, counted;
// the receiver neither blocks nor overwrites rows not yet drained.
func TestExportFullRingDrops(t *testing.T) {
	e := NewExport(true, 4)
	c, now := exportConn(e)
	var b RecvBatch
	seqs, echo := make([]uint32, 10), make([]int64, 10)
	for i := range seqs {
		seqs[i], echo[i] = uint32(i+1), now.Wall-5e6
	}
	sentStatus(c, echo)
	loadBatch(&b, now, seqs, echo)
	c.Receive(&b)
	var got []uint32
	e.Drain(func(r *ExportRow) { got = append(got, r.SeqNo) })
	if len(got) != 4 || got[0] != 1 || got[3] != 4 || e.Dropped() != 6 {
		t.Errorf("rows %v, dropped %d: want the first 4, 6 dropped", got, e.Dropped())
	}
}

// TestExportAllocatesNothing: the Engine Thread's share of -O is a copy
// into the ring.
func TestExportAllocatesNothing(t *testing.T) {
	e := NewExport(true, 1<<12)
	c, now := exportConn(e)
	var b RecvBatch
	seq := uint32(1)
	seqs, echo := make([]uint32, 32), make([]int64, 32)
	batch := func() {
		for i := range seqs {
			seqs[i], echo[i] = seq, now.Wall-int64(seq%3)*1e6
			seq++
		}
		loadBatch(&b, now, seqs, echo)
		c.Receive(&b)
		e.Drain(func(*ExportRow) {})
	}
	batch()
	c.Events()
	if a := testing.AllocsPerRun(20, batch); a != 0 {
		t.Errorf("%.1f allocations per batch with the export on", a)
	}
}
