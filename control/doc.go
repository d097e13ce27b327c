// Package control is the Control Phase of the UDP Speed Test Protocol
// (RFC 9946): the Test Setup, Null and Test Activation PDUs, their
// authentication, the server's Admission of Test Connections, and the
// client's side of the same exchange. It never moves Load or Status PDUs:
// once a Test Activation is answered, a Test Connection's socket goes to
// the Data Phase (package dataphase, driven by package engine) through the
// Network and DataPhase interfaces of net.go.
//
// # PDUs: where each is parsed and built
//
//   - setup.go: the Test Setup PDU (0xACE1, 56 bytes for every protocol
//     version), request and response; SealControlChecksum.
//   - null.go: the Null PDU (0xDEAD, 48 bytes, protocol 20 only), which the
//     server sends from the new test port to the client right after
//     accepting a Setup, so that a stateful firewall in front of the server
//     lets the client's Test Activation in.
//   - activation.go: the Test Activation PDU (0xACE2; 104 bytes at protocol
//     20, 60 before), its decoding of a request of any length in between:
//     OB-UDPST 9.0.0's server takes a protocol 20 request of 60 to 103 bytes
//     too and answers it at its own length.
//   - coerce.go: the server's checks of a Test Activation Request.
//     OB-UDPST 9.0.0 never rejects one: each out-of-range field is replaced
//     by a default or by the server's own limit and written back into the
//     response, in a fixed order; Coerce keeps that order and those values.
//   - codes.go: the Setup Response codes (cmdResponse) and their texts. A
//     client turns a refusal code c into ErrorStatus 100+c, as OB-UDPST 9.0.0
//     does.
//   - auth.go, keys.go, keystrength.go, replay.go: authentication (RFC 9946's
//     authentication mode 1, HMAC-SHA256 over the PDU with its digest and
//     checksum zeroed, keys derived per Setup for protocol 20); key files
//     (-K) in OB-UDPST 9.0.0's format; the bits of a key; the cache of
//     accepted digests that drops a replayed Setup Request.
//
// # How OB-UDPST 9.0.0 answers, which udpstp keeps for interop
//
// A Setup Response and a Test Activation Response are the request edited
// in place and sent back at the received length: cmdRequest and
// cmdResponse set, the test port (Setup) or the coerced values (Test
// Activation) written, every other byte echoed. At protocol 20 the auth
// block is rewritten for every response (answerAuth): signed with the
// server's key when the request had authMode 1 (a zero key when the server
// had none to try), cleared otherwise; before protocol 20 it is echoed,
// with the digest zeroed when the server checked it. The checksum field is
// zeroed (sealed again where checksums are on). The server signs its
// refusals too (code 7 with the key it tried last, code 4 with a zero key),
// so a keyed OB-UDPST 9.0.0 client fails its own check of a code-4 answer
// and reports ErrorStatus 107, not 104.
//
// A peer with an IPv4 or IPv4-mapped address (on a dual-stack socket) is an
// IPv4 peer, as OB-UDPST 9.0.0 classifies it: IP_TOS rather than
// IPV6_TCLASS, and no 20-byte reduction of payload sizes (IsIPv4).
//
// A Setup Request is checked in OB-UDPST 9.0.0's order, the first failing
// check giving the code: malformed requests (length, PDU identifier,
// cmdRequest, checksum) are dropped without an answer; then the digest and
// its time window (±5 s), which win over every later check; then version
// (11..20 accepted, 12..19 treated as 11), the multi-connection fields,
// jumbo and traditional-MTU bits, the bandwidth asked under -B, the
// authentication mode; then a slot and a socket (code 13 when none). The
// server has 254 Test Connection slots. The client allows 3 s from its
// Setup Request to the Test Activation Response, not restarted between
// them.
//
// A Test Activation Request is never refused for what it asks: the server
// coerces each value it cannot grant (the test time, the rate row, DSCP
// and ECN, random payload) into its limits and answers with what it
// granted, which a client then adopts as read back from the response
// (coerce.go). One whose authentication fails gets no answer at all. When
// DSCP/ECN is granted, the response itself already goes out marked.
//
// # The server: where the state machine is
//
// A Test Connection on the server goes through: Setup accepted (a slot, a
// socket, bandwidth under -B reserved: admission.go) -> pending, awaiting
// its Test Activation from the Setup's own address (pending.go; the oldest
// pending one of the source holding the most is evicted when a newer Setup
// needs room) -> activated, its Data Phase running on an Engine Thread ->
// ended, its slot and bandwidth released.
//
//   - server.go: Server, its control sockets and the loop that reads them
//     (Serve); the limits of ServerOptions.
//   - server_setup.go: one Setup Request decided, answered and, when
//     accepted, handed to a new Test Connection.
//   - server_conn.go: a Test Connection's lifetime: its Test Activation
//     (checked to come from its Setup's address), its Data Phase, its end.
//   - admission.go, pending.go: the slots and bandwidth pools, and the
//     pending Test Connections and their eviction.
//   - episodes.go: floods of refusals turned into a few log lines.
//   - config.go: ServerConfig and ClientConfig (the options of both sides).
//
// # Counters
//
// server_counters.go declares every counter of the server's Control Phase
// once, with its name and help (ServerCounter, ServerSnapshot.Each); the
// server adds its Data Phases' counters (dataphase/counters.go) to the same
// snapshot. -G, the service status line and the metrics read them there.
//
// # The client
//
// client.go: Activate runs one Test Connection's Control Phase from the
// client (Setup, the Null PDU, Test Activation, with the 3 s timer) and
// returns the socket for its Data Phase; package client runs several and
// the report.
package control
