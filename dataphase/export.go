package dataphase

import (
	"math"
	"sync/atomic"

	"github.com/udpstp/udpstp/clock"
)

// The Load Receiver's per-datagram export, OB-UDPST's -O: one row per
// accepted Load PDU that gave an RTT sample (a new Status PDU time echoed),
// or with '+' per accepted Load PDU, the RTT columns then empty. OB-UDPST
// fprintf()s each row on its receiving thread; here the Engine Thread only
// copies the row into a preallocated ring (no allocation, no system call)
// and a writer elsewhere drains, formats and writes it (client/export.go).
// A ring that the writer lets fill up loses rows, counted (Dropped), never
// the Engine Thread's time.

// ExportRow is one exported Load PDU, with OB-UDPST's columns:
// SeqNo,PayLoad,ECNValue,SrcTxTime,DstRxTime,OWD,IntfMbps,IntfMbpsAlt,
// RTTTxTime,RTTRxTime,RTTRespDelay,RTT,StatusLoss.
type ExportRow struct {
	SeqNo   uint32
	Payload uint16 // the UDP payload size the PDU states
	ECN     uint8  // the ECN bits received (OB-UDPST reads them only with -Z, else 0)
	HasRTT  bool   // the RTT columns are set; else they are empty
	// SrcSec and SrcNsec are the Load PDU's send time as on the wire.
	SrcSec, SrcNsec uint32
	// DstRx is the receive time, wall clock in ns: DstRxTime and RTTRxTime.
	DstRx int64
	// OWD is the one-way delay in ms with the clocks' difference.
	OWD int32
	// IntfMbps and IntfMbpsAlt are the local interface's last rates (-E),
	// in the test's direction and in the other one; 0 without -E.
	IntfMbps, IntfMbpsAlt float64
	// RTTSec and RTTNsec are the echoed Status PDU send time.
	RTTSec, RTTNsec uint32
	RespDelay       uint16 // the peer's rttRespDelay, ms
	RTT             uint32 // the RTT sample, ms
	StatusLoss      uint16 // the peer's spduSeqErr
}

// Export is a single-producer, single-consumer ring of ExportRows: the
// Engine Thread of one Test Connection writes, one writer reads.
type Export struct {
	all     bool
	rows    []ExportRow
	mask    uint64
	head    atomic.Uint64 // rows written, by the Engine Thread
	tail    atomic.Uint64 // rows read, by the writer
	dropped atomic.Uint64
	intf    [2]atomic.Uint64 // float64 bits of IntfMbps, IntfMbpsAlt
}

// NewExport returns a ring for at least size rows (a power of two is
// used); all is OB-UDPST's '+' prefix: every accepted Load PDU, not only
// those with an RTT sample.
func NewExport(all bool, size int) *Export {
	n := 1
	for n < size {
		n <<= 1
	}
	return &Export{all: all, rows: make([]ExportRow, n), mask: uint64(n - 1)}
}

// All reports whether every accepted Load PDU is exported ('+').
func (e *Export) All() bool { return e.all }

// SetInterfaceRates sets the interface rates (-E) the rows carry from now
// on; any goroutine may call it.
func (e *Export) SetInterfaceRates(mbps, alt float64) {
	e.intf[0].Store(math.Float64bits(mbps))
	e.intf[1].Store(math.Float64bits(alt))
}

// Drain hands each row written since the last call to fn, in order, and
// frees their slots. Only one goroutine may drain; fn must not keep the
// pointer. It returns the number of rows.
func (e *Export) Drain(fn func(*ExportRow)) int {
	t, h := e.tail.Load(), e.head.Load()
	for i := t; i != h; i++ {
		fn(&e.rows[i&e.mask])
	}
	e.tail.Store(h)
	return int(h - t)
}

// Dropped is the number of rows lost because the ring was full.
func (e *Export) Dropped() uint64 { return e.dropped.Load() }

// SetExport makes a Load Receiver export what it accepts into e (nil: no
// export); call it before the first Receive.
func (c *Conn) SetExport(e *Export) {
	if !c.loadSender {
		c.rcv.exp = e
	}
}

// export writes the row of Load PDU h received at rxWall: with an RTT
// sample when rtt is true, else only for '+'.
func (e *Export) add(h *LoadHeader, rxWall int64, ecn uint8, rtt bool, rttMs uint32) {
	if !rtt && !e.all {
		return
	}
	hd := e.head.Load()
	if hd-e.tail.Load() > e.mask {
		e.dropped.Add(1)
		return
	}
	r := &e.rows[hd&e.mask]
	*r = ExportRow{
		SeqNo: h.SeqNo, Payload: h.UDPPayload, ECN: ecn, HasRTT: rtt,
		SrcSec: h.LpduTimeSec, SrcNsec: h.LpduTimeNsec, DstRx: rxWall,
		OWD:      wrapInt32(roundMs(rxWall - clock.Join(h.LpduTimeSec, h.LpduTimeNsec))),
		IntfMbps: math.Float64frombits(e.intf[0].Load()), IntfMbpsAlt: math.Float64frombits(e.intf[1].Load()),
	}
	if rtt {
		r.RTTSec, r.RTTNsec, r.RespDelay, r.RTT, r.StatusLoss = h.SpduTimeSec, h.SpduTimeNsec, h.RTTRespDelay, rttMs, h.SpduSeqErr
	}
	e.head.Store(hd + 1)
}
