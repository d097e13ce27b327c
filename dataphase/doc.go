// Package dataphase is the Data Phase of the UDP Speed Test Protocol
// (RFC 9946) and the measurement of the RFC 9097 method, sans-IO: it reads
// no clock, opens no socket and starts no goroutine. An executor (package
// engine over real sockets, engine/sim in virtual time) hands it the time,
// the datagrams that arrived and what the kernel sent, and asks it what to
// send next and when it is due again (Core, core.go). Its results come out
// as Events (events.go).
//
// # PDUs: where each is parsed and built
//
//   - loadpdu.go: the Load PDU (0xBEEF), its 32-byte header (identical at
//     protocols 11 and 20) and SealLoadChecksum; the filler after the header
//     is never read. batch.go holds the datagrams an executor sends
//     (SendBuffer: header slots, lengths) and receives (RecvBatch: headers
//     only, with each datagram's receive time and TOS).
//   - statuspdu.go: the Status Feedback PDU (0xFEED): 204 bytes at protocol
//     20, 168 at 11..19 (OB-UDPST 8.2.0's unpacked C struct, with its pad
//     bytes), its Sub-Interval block and its ECN area. OB-UDPST 9.0.0 writes
//     only bytes 160..187 of that area and leaves 188..203 holding stale
//     bytes of its receive buffer, so a non-zero value in the nominal
//     checksum field at 202 is garbage, not a checksum: udpstp writes those
//     bytes as zero, ignores them in what it receives, and verifies a
//     checksum only where a checksum-enabled 9.0.0 build writes it
//     (186..187).
//   - checksum.go: the RFC 1071 header checksum both PDUs may carry (0 means
//     none); OB-UDPST 9.0.0's sum over native words agrees with it on a
//     little-endian host.
//   - ratetable.go: the sending rate table (SendingRate, the rows Load
//     Senders run at, as OB-UDPST 9.0.0 builds them) and the structure the
//     Test Activation and Status PDUs carry.
//   - errors.go: PDUError, what a malformed datagram is reported as, and
//     its Rejection class (size, checksum, format) the counters go by.
//
// # The state machine
//
// conn.go's Conn is one Test Connection's Data Phase: either the Load Sender
// (sends Load PDUs, receives Status PDUs) or the Load Receiver (the reverse),
// and on the server also the rate adjustment in both directions. Poll sends
// what is due (Bursts of Load PDUs, or a Status PDU every Trial Interval),
// Receive takes what arrived (onLoad, onStatus, invalid datagrams counted),
// Sent and PeerRefused take what the socket did, Deadline says when to come
// back; the watchdog (3 s without a valid PDU), the stop handshake
// (testAction 1 and 2, rxStopped) and the end of the test time end it with
// an EndReason. Its fields are grouped by concern, each group declared in
// the file of that concern, beside the parts it drives:
//
//   - conn.go: the Conn, NewConn, Poll and Receive (which dispatch to the
//     files below), Sent, PeerRefused, Deadline, Stop and Fail; the stop
//     handshake (stopHandshake, serverStopped, peerStopped), what was seen
//     of the peer (liveness: the watchdog, rxStopped, ICMP refusals), and
//     the end.
//   - load.go: a Load Sender's Send Plan (pollLoad, the anti-amplification
//     cap on it, the stop's one datagram) and a Load Receiver taking a Load
//     PDU (onLoad).
//   - status.go: a Load Receiver writing its Status PDU every Trial
//     Interval (pollStatus; on the server after the upstream rate
//     adjustment) and a Load Sender taking one (onStatus: on a client the
//     row it assigns, on the server the downstream rate adjustment, paced
//     by adjustPace); Trial and Sub-Interval events.
//   - police.go: the server's over-rate policer of an upstream Load Sender.
//   - invalid.go: invalid datagrams counted by PDU and Rejection, with
//     OB-UDPST's warning line, and a client's implausible PDUs dropped.
//   - warnings.go: every warning code (Event.Code: OB-UDPST's ErrorStatus
//     warnings 1..8 and ours), the cap of MaxWarnings, and the once-only
//     warnings.
//   - sender.go: the Load Sender: two transmitters on a fixed grid of the
//     Test Time Base, Bursts, catch-up and deferral. OB-UDPST 9.0.0
//     reschedules each transmitter from the time it ran, so every late timer
//     lowers the rate it offers; udpstp keeps the grid (see the file).
//   - receiver.go: the Load Receiver's statistics, kept exactly as
//     OB-UDPST 9.0.0 keeps them (sequence errors, duplicates, one-way delay
//     variation, RTT), per Trial Interval and per Sub-Interval.
//   - ratecontrol.go: the server's rate adjustment, RFC 9097 Section 8.1 as
//     OB-UDPST 9.0.0 implements it (algorithm B, and its C). OB-UDPST 9.0.0's
//     server sends a downstream test with a fixed row (one not marked as a
//     starting row) at row 0 until the client's first Status PDU and at the
//     fixed row from then on; while a dual-phase test's first Sub-Intervals
//     have rate adjustment suppressed (srAdjSuppCount), a fixed-row test runs
//     at row 0. udpstp does the same.
//   - timemath.go: OB-UDPST 9.0.0's rounding of times to ms and µs, which
//     results depend on to the millisecond.
//   - amplification.go: the server's anti-amplification budget before the
//     peer has shown it receives (docs/security.md).
//   - plausible.go: a client's rules for figures its peer's PDUs cannot
//     truly carry (forged feedback), which invalid.go's implausible drops.
//   - params.go, grant.go: a Test Connection's parameters as the Test
//     Activation set them, the protocol's limits, and what a client checks
//     of a server's grant.
//   - frag.go: IP fragmentation accounting (udpstp's own). OB-UDPST 9.0.0
//     counts every datagram as one IP packet with one header, and its GSO
//     build ends the test ("GSO incompatible with IP fragmentation") rather
//     than send a datagram larger than the path MTU.
//   - export.go: the -O ring of per-datagram rows.
//
// # Counters
//
// counters.go declares every counter of a Data Phase once (Counter, with
// its name and help in counterInfo): traffic as the Status PDUs report it
// and what the peer or the path got wrong, counted per event, never per
// valid datagram. The server adds them up (control/server_counters.go);
// -G and the metrics read them from there.
package dataphase
