package control

import (
	"sync/atomic"

	"github.com/udpstp/udpstp/dataphase"
)

// The server's counters: what its Control Phase saw and what its Data
// Phases reported, for the logs, -G and the service status line.

// ServerCounters count what the server's Control Phase saw, for logs and
// statistics. Every refusal is counted by its code.
type ServerCounters struct {
	SetupRequests    atomic.Uint64 // every datagram on a control socket
	SetupRateLimited atomic.Uint64 // dropped unanswered: its source exceeded its Setup Request rate
	SetupInvalid     atomic.Uint64 // dropped silently: length, identifier, cmdRequest, checksum
	Accepted         atomic.Uint64
	Rejected         [14]atomic.Uint64 // by Setup code
	LegacyAccepted   atomic.Uint64
	ActivationWait   atomic.Uint64 // Test Connections released without an activation
	Activated        atomic.Uint64
	EndedByReason    [8]atomic.Uint64

	// ActivationRequests counts valid Test Activation Requests, before
	// their authentication is checked.
	ActivationRequests atomic.Uint64
	// Invalid control PDUs (Setup and Test Activation Requests) by what
	// failed: the length, the checksum, anything else.
	InvalidSize, InvalidChecksum, InvalidFormat atomic.Uint64
	// Authentication failures of Setup (codes 7 and 8, also in Rejected)
	// and Test Activation Requests: a digest no key matches, a time
	// outside the window.
	AuthFailure, AuthTime atomic.Uint64
	// Running Data Phases by direction.
	RunningDown, RunningUp atomic.Int64

	Data DataCounters
}

// DataCounters add up what the Data Phases report in their events (the
// -G file's traffic figures). They come from Status PDUs, so they are
// what each receiving end counted: the load the server sent as its
// clients received it, and the load the server received.
type DataCounters struct {
	StatusSent, StatusReceived atomic.Uint64 // Status PDUs sent and (valid) received
	// The server's load as its clients reported receiving it; TxIPBytes
	// counts IP and UDP headers too (28 bytes, 48 for IPv6).
	TxDatagrams, TxIPBytes, TxLoss, TxOooDup atomic.Uint64
	// The load the server received, as its Status PDUs reported it.
	RxDatagrams, RxIPBytes, RxLoss, RxOooDup atomic.Uint64
	// Status PDUs lost (a reordered one counts 65535, as in OB-UDPST):
	// those sent to us (local) and those we sent (remote, as the peer
	// reported); and the "traffic has completely stopped" events.
	LocalStatusLoss, RemoteStatusLoss   atomic.Uint64
	LocalTrafficStop, RemoteTrafficStop atomic.Uint64
	// Invalid Load and Status PDUs by what failed (every one: the Data
	// Phase counts beyond the warnings it shows).
	LoadInvalidSize, LoadInvalidFormat, LoadInvalidChecksum       atomic.Uint64
	StatusInvalidSize, StatusInvalidFormat, StatusInvalidChecksum atomic.Uint64
}

// countInvalid counts an invalid control PDU by what failed.
func (s *Server) countInvalid(err error) {
	// The decoders return a *dataphase.PDUError as it is, never wrapped; a
	// type assertion costs nothing where errors.As would allocate.
	var field string
	if pe, ok := err.(*dataphase.PDUError); ok {
		field = pe.Field
	}
	switch field {
	case "length":
		s.Counters.InvalidSize.Add(1)
	case "checkSum":
		s.Counters.InvalidChecksum.Add(1)
	default:
		s.Counters.InvalidFormat.Add(1)
	}
}

// countAuth counts an authentication failure by its code.
func (s *Server) countAuth(code uint8) {
	if code == SetupAuthTime {
		s.Counters.AuthTime.Add(1)
	} else {
		s.Counters.AuthFailure.Add(1)
	}
}

// countEvent adds a Data Phase event to the data counters. It runs on the
// executor's thread for every event, so it only adds.
func (s *Server) countEvent(ev *dataphase.Event, hdr uint64) {
	d := &s.Counters.Data
	switch ev.Kind {
	case dataphase.EvTrial:
		t := &ev.Trial
		ip := uint64(t.Bytes) + uint64(t.Datagrams)*hdr
		if t.Sent {
			// Our Status PDU: what we received in its Trial Interval.
			d.StatusSent.Add(1)
			d.RxDatagrams.Add(uint64(t.Datagrams))
			d.RxIPBytes.Add(ip)
			d.RxLoss.Add(uint64(t.Loss))
			d.RxOooDup.Add(uint64(t.Ooo) + uint64(t.Dup))
		} else {
			// The peer's Status PDU: what it received of our load.
			d.StatusReceived.Add(1)
			d.TxDatagrams.Add(uint64(t.Datagrams))
			d.TxIPBytes.Add(ip)
			d.TxLoss.Add(uint64(t.Loss))
			d.TxOooDup.Add(uint64(t.Ooo) + uint64(t.Dup))
		}
	}
	// Counted by the Data Phase itself, uncapped; a Trial Interval's event
	// and the end carry what happened since the previous one.
	a := &ev.Anomalies
	d.LocalStatusLoss.Add(a.LocalStatusLoss)
	d.RemoteStatusLoss.Add(a.RemoteStatusLoss)
	d.LocalTrafficStop.Add(a.LocalTrafficStop)
	d.RemoteTrafficStop.Add(a.RemoteTrafficStop)
	d.LoadInvalidSize.Add(a.LoadInvalidSize)
	d.LoadInvalidFormat.Add(a.LoadInvalidFormat)
	d.LoadInvalidChecksum.Add(a.LoadInvalidChecksum)
	d.StatusInvalidSize.Add(a.StatusInvalidSize)
	d.StatusInvalidFormat.Add(a.StatusInvalidFormat)
	d.StatusInvalidChecksum.Add(a.StatusInvalidChecksum)
}

// ServerSnapshot is a copy of a Server's counters and state at one time
// (the -G records, the service status line).
type ServerSnapshot struct {
	Running, RunningDown, RunningUp int // Test Connections in the Data Phase
	Reserved                        int // Test Connections holding a slot (also awaiting activation)
	DownMbps, UpMbps                int // bandwidth reserved per direction

	SetupRequests, SetupRateLimited, SetupInvalid uint64
	Accepted, LegacyAccepted                      uint64
	Rejected                                      [14]uint64
	ActivationRequests, Activated                 uint64
	ActivationWait                                uint64
	InvalidSize, InvalidChecksum, InvalidFormat   uint64
	AuthFailure, AuthTime                         uint64
	EndedByReason                                 [8]uint64

	Data DataTotals
}

// DataTotals are DataCounters read at one time.
type DataTotals struct {
	StatusSent, StatusReceived                                    uint64
	TxDatagrams, TxIPBytes, TxLoss, TxOooDup                      uint64
	RxDatagrams, RxIPBytes, RxLoss, RxOooDup                      uint64
	LocalStatusLoss, RemoteStatusLoss                             uint64
	LocalTrafficStop, RemoteTrafficStop                           uint64
	LoadInvalidSize, LoadInvalidFormat, LoadInvalidChecksum       uint64
	StatusInvalidSize, StatusInvalidFormat, StatusInvalidChecksum uint64
}

// RejectedTotal is the number of Setup Requests answered with a refusal.
func (n *ServerSnapshot) RejectedTotal() uint64 {
	var t uint64
	for _, v := range n.Rejected {
		t += v
	}
	return t
}

// Snapshot reads the counters (each atomically; the set is not one
// instant, which for statistics does not matter).
func (s *Server) Snapshot() ServerSnapshot {
	c := &s.Counters
	var n ServerSnapshot
	n.Reserved, n.DownMbps, n.UpMbps = s.adm.snapshot()
	n.RunningDown, n.RunningUp = int(c.RunningDown.Load()), int(c.RunningUp.Load())
	n.Running = n.RunningDown + n.RunningUp
	n.SetupRequests, n.SetupRateLimited, n.SetupInvalid = c.SetupRequests.Load(), c.SetupRateLimited.Load(), c.SetupInvalid.Load()
	n.Accepted, n.LegacyAccepted = c.Accepted.Load(), c.LegacyAccepted.Load()
	for i := range c.Rejected {
		n.Rejected[i] = c.Rejected[i].Load()
	}
	n.ActivationRequests, n.Activated = c.ActivationRequests.Load(), c.Activated.Load()
	n.ActivationWait = c.ActivationWait.Load()
	n.InvalidSize, n.InvalidChecksum, n.InvalidFormat = c.InvalidSize.Load(), c.InvalidChecksum.Load(), c.InvalidFormat.Load()
	n.AuthFailure, n.AuthTime = c.AuthFailure.Load(), c.AuthTime.Load()
	for i := range c.EndedByReason {
		n.EndedByReason[i] = c.EndedByReason[i].Load()
	}
	d := &c.Data
	n.Data = DataTotals{
		StatusSent: d.StatusSent.Load(), StatusReceived: d.StatusReceived.Load(),
		TxDatagrams: d.TxDatagrams.Load(), TxIPBytes: d.TxIPBytes.Load(), TxLoss: d.TxLoss.Load(), TxOooDup: d.TxOooDup.Load(),
		RxDatagrams: d.RxDatagrams.Load(), RxIPBytes: d.RxIPBytes.Load(), RxLoss: d.RxLoss.Load(), RxOooDup: d.RxOooDup.Load(),
		LocalStatusLoss: d.LocalStatusLoss.Load(), RemoteStatusLoss: d.RemoteStatusLoss.Load(),
		LocalTrafficStop: d.LocalTrafficStop.Load(), RemoteTrafficStop: d.RemoteTrafficStop.Load(),
		LoadInvalidSize: d.LoadInvalidSize.Load(), LoadInvalidFormat: d.LoadInvalidFormat.Load(),
		LoadInvalidChecksum: d.LoadInvalidChecksum.Load(),
		StatusInvalidSize:   d.StatusInvalidSize.Load(), StatusInvalidFormat: d.StatusInvalidFormat.Load(),
		StatusInvalidChecksum: d.StatusInvalidChecksum.Load(),
	}
	return n
}
