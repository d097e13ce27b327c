package control

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/udpstp/udpstp/clock"
	"github.com/udpstp/udpstp/dataphase"
)

// SetupError is a Test Connection that could not be set up, with the
// ErrorStatus OB-UDPST's client exits with and its message.
type SetupError struct {
	Status int    // 1 (timeout), 75, 100+code, 150+code, 107/108, 157/158
	Msg    string // one line, "ERROR: ..." or "WARNING: ..." as OB-UDPST prints it
	cause  error  // ErrNoAnswer for a timeout, else nil
}

func (e *SetupError) Error() string { return e.Msg }

// Unwrap lets errors.Is(err, ErrNoAnswer) tell a timeout.
func (e *SetupError) Unwrap() error { return e.cause }

// ClientConn is an activated Test Connection of a client: its socket,
// connected to the server's test port, and what the server granted.
type ClientConn struct {
	Sock      Socket
	Server    netip.AddrPort // the control port we set up with
	TestPeer  netip.AddrPort // the server's test socket
	Local     netip.AddrPort
	Setup     SetupPDU      // the accepted Setup Response
	Granted   ActivationPDU // the Test Activation Response: the values to use
	Params    dataphase.Params
	Activated clock.Pair // when the response arrived
}

// Alert receives OB-UDPST's ALERT lines (invalid control responses), every
// one: the receiver caps what it shows (report.Collector.Alert). They do
// not change the outcome.
type Alert func(msg string)

// resendAfter is when an unanswered Setup or Test Activation Request is
// sent again, within the one 3 s timer. OB-UDPST never resends; a resent
// Setup Request costs its server a second session that times out in 3 s,
// and a resent Test Activation reaches a server already in its Data Phase
// as one invalid datagram, so resending is harmless to it and saves tests
// on lossy paths.
const resendAfter = time.Second

// Activate runs the Control Phase of Test Connection index of a client run:
// Setup, Null (ignored), Test Activation, all within SetupTimeout. On
// success the socket is connected to the server's test port and marked
// with the granted DSCP/ECN byte.
func Activate(ctx context.Context, n Network, cfg *ClientConfig, srv ServerAddr, index int, mcIdent uint16, alert Alert) (*ClientConn, error) {
	p, err := Setup(ctx, n, cfg, srv, index, mcIdent, alert)
	if err != nil {
		return nil, err
	}
	return p.Activate(ctx)
}

// Pending is a Test Connection whose Setup Request a server accepted and
// that awaits its Test Activation (RFC 9946, the Test Setup PDU): the
// first half of Activate, for a client that sets up with several servers
// and times their answers before it picks one (client/rttselect.go).
//
// The protocol has no PDU that withdraws an accepted Setup. A Pending
// that is closed instead of activated is left to the server's timer: the
// server releases the Test Connection (its socket, its slot, a -B
// reservation) when no Test Activation came within SetupTimeout, as it
// does for a client that died after its Setup (counted as
// activation_timeouts; OB-UDPST 9.0.0's server does the same).
type Pending struct {
	x        clientExchange
	resp     SetupPDU
	Server   netip.AddrPort // the control port set up with
	RTT      time.Duration  // from the Setup Request sent to its accepting response read
	Deadline time.Time      // the Setup's SetupTimeout: the server waits for the activation until then
}

// Setup opens a socket and runs the Setup exchange of Test Connection
// index with srv, within SetupTimeout (or ctx's deadline, if sooner). The
// Pending it returns holds the socket until Activate or Close.
func Setup(ctx context.Context, n Network, cfg *ClientConfig, srv ServerAddr, index int, mcIdent uint16, alert Alert) (*Pending, error) {
	addr, err := resolve(ctx, srv.Host, cfg.Family)
	if err != nil {
		return nil, &SetupError{Status: 75, Msg: "ERROR: " + err.Error()}
	}
	server := netip.AddrPortFrom(addr, uint16(srv.Port))
	fam := dataphase.FamilyV6
	if addr.Is4() {
		fam = dataphase.FamilyV4
	}
	laddr := netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	if fam == dataphase.FamilyV4 {
		laddr = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	sock, err := n.ListenUDP(laddr, SocketOptions{Family: fam, V6Only: cfg.Family == dataphase.FamilyV6, SockBuf: cfg.SockBuf})
	if err != nil {
		return nil, &SetupError{Status: 75, Msg: "ERROR: " + err.Error()}
	}
	p, err := setup(ctx, sock, cfg, server, index, mcIdent, alert)
	if err != nil {
		sock.Close()
		return nil, err
	}
	return p, nil
}

// setup runs a client's Setup exchange on sock within one SetupTimeout
// (or ctx's deadline, if sooner).
func setup(ctx context.Context, sock Socket, cfg *ClientConfig, server netip.AddrPort, index int, mcIdent uint16, alert Alert) (*Pending, error) {
	p := &Pending{Server: server, Deadline: time.Now().Add(SetupTimeout)}
	p.x = clientExchange{sock: sock, cfg: cfg, server: server, alert: alert,
		// server.String brackets an IPv6 address ([::1]:24601), where
		// OB-UDPST prints ::1:24601.
		suffix:   " " + server.String(),
		deadline: p.Deadline,
		buf:      make([]byte, 65536),
		pver:     cfg.protocol(),
		keyed:    len(cfg.Key) > 0,
	}
	if d, ok := ctx.Deadline(); ok && d.Before(p.x.deadline) {
		p.x.deadline = d
	}
	// An interrupt ends the wait at once instead of at the deadline.
	defer context.AfterFunc(ctx, func() { sock.Close() })()
	resp, err := p.x.setup(ctx, index, mcIdent)
	if err != nil {
		return nil, err
	}
	p.resp, p.RTT = resp, p.x.rtt
	return p, nil
}

// Activate runs the Test Activation exchange of p, from the same socket,
// within the Setup's SetupTimeout (or ctx's deadline, if sooner). On
// failure the socket is closed.
func (p *Pending) Activate(ctx context.Context) (*ClientConn, error) {
	x := &p.x
	x.deadline = p.Deadline
	if d, ok := ctx.Deadline(); ok && d.Before(x.deadline) {
		x.deadline = d
	}
	cc, err := p.activate(ctx)
	if err != nil {
		x.sock.Close()
		return nil, err
	}
	return cc, nil
}

// Close gives p up: its socket is closed and the server's Test Connection
// ends at the server's timer (see Pending).
func (p *Pending) Close() { p.x.sock.Close() }

// activate sends the Test Activation to the address asked and the test
// port the Setup Response named: the connected socket then takes only
// what comes from there.
func (p *Pending) activate(ctx context.Context) (*ClientConn, error) {
	x := &p.x
	defer context.AfterFunc(ctx, func() { x.sock.Close() })()
	peer := netip.AddrPortFrom(x.server.Addr(), p.resp.TestPort)
	if err := x.sock.Connect(peer); err != nil {
		return nil, &SetupError{Status: 75, Msg: "ERROR: connect to" + x.suffix + ": " + err.Error()}
	}
	granted, err := x.activation(ctx)
	if err != nil {
		return nil, err
	}
	return accepted(x.sock, x.cfg, x.server, peer, p.resp, granted)
}

// clientExchange is one client Test Connection's Control Phase in
// progress: its socket, the server asked, the protocol version spoken and
// the session keys of a keyed client.
type clientExchange struct {
	sock     Socket
	cfg      *ClientConfig
	server   netip.AddrPort
	alert    Alert
	suffix   string // " server:port", as OB-UDPST's messages end
	deadline time.Time
	buf      []byte
	pver     uint16
	keyed    bool
	keys     SessionKeys   // set by setup when keyed
	rtt      time.Duration // set by setup: the Setup Request to its accepting response
}

// setup sends the Setup Request, in the layout of the version spoken
// (legacy.go), and waits for the server's accepting Setup Response.
func (x *clientExchange) setup(ctx context.Context, index int, mcIdent uint16) (SetupPDU, error) {
	sock, server := x.sock, x.server
	req := setupRequest(x.cfg, index, mcIdent)
	out := encodeSetupProto(&req, make([]byte, SetupLen))
	if x.keyed {
		t := uint32(time.Now().Unix())
		x.keys = DeriveKeys(x.cfg.Key, t)
		Sign(out, x.keys.Client[:], t, x.cfg.KeyID)
	}
	var resp SetupPDU
	// foreign is the first datagram that came from elsewhere than the
	// server asked: named if the wait times out.
	var foreign netip.AddrPort
	// The Setup Request goes out once, as OB-UDPST's does: a second one
	// would cost the server a second session, and with -B a second
	// bandwidth reservation for 3 s that sibling connections may need.
	// With IP_RECVERR on, the unconnected socket hears the kernel's ICMP
	// port unreachable for the Setup Request: a closed port is reported
	// at once, where OB-UDPST's client waits its 3 s. It is off again
	// before the Data Phase, whose connected socket reports ICMP errors
	// without it, and whose error queue it would fill.
	recvErr, _ := sock.(recvErrSocket)
	if recvErr != nil && recvErr.SetRecvErr(true) != nil {
		recvErr = nil
	}
	// The round trip is the Setup Request's send to the read of its
	// accepting response: the server's Setup handling (a socket opened)
	// is in it, as it is in every client's Control Phase.
	var sent time.Time
	err := exchange(ctx, sock, x.buf, x.deadline, 1, true, func() error { sent = time.Now(); return sock.SendTo(out, server) },
		func(b []byte, from netip.AddrPort) (bool, error) {
			read := time.Now()
			// Only the address and port asked answer: anyone may send a
			// datagram that looks like a Setup Response, naming a test
			// port at an address of its choice. (OB-UDPST's client takes
			// a response from anywhere and tests against its source.)
			if from.Addr().Unmap() != server.Addr().Unmap() || from.Port() != server.Port() {
				if !foreign.IsValid() {
					foreign = from
				}
				return false, nil
			}
			if preChecksum(x.pver) {
				b, _ = widenSetup(b)
			}
			if err := resp.Decode(b); err != nil {
				x.alert(alertText("setup response", b) + " [Server" + x.suffix + "]")
				return false, nil
			}
			// A keyed client checks the response's signature before its
			// code (so a server without keys gives 107, not 104).
			if x.keyed {
				if c := VerifyResponse(b, x.keys, time.Now()); c != 0 {
					return false, authFailure(c, 100, "setup response", x.suffix)
				}
			}
			if resp.CmdResponse != SetupAccepted {
				return false, setupRefused(resp.CmdResponse, resp.ProtocolVer, x.suffix)
			}
			x.rtt = read.Sub(sent)
			return true, nil
		})
	if recvErr != nil {
		recvErr.SetRecvErr(false) // error on a closed socket only, which the next step reports
	}
	if err != nil {
		err = setupErr(ctx, err, x.suffix)
		if se, ok := err.(*SetupError); ok && se.Status == dataphase.WarnServerTimeout && foreign.IsValid() {
			// A multi-homed server that answers from another of its
			// addresses (OB-UDPST bound to a wildcard address does)
			// looks like this: say so.
			se.Msg += fmt.Sprintf(" (a response came from %v, which was not asked; ask that address instead)", foreign)
		}
		return resp, err
	}
	return resp, nil
}

// activation sends the Test Activation Request on the connected socket
// and waits for the server's grant, which it checks against the request.
func (x *clientExchange) activation(ctx context.Context) (ActivationPDU, error) {
	sock := x.sock
	ta := activationRequest(x.cfg)
	legacy := x.pver < AuthECNProtocolVer
	taOut := encodeActivationProto(&ta, x.pver)
	if x.keyed {
		Sign(taOut, x.keys.Client[:], uint32(time.Now().Unix()), x.cfg.KeyID)
	}
	var granted ActivationPDU
	// A lost activation is sent again once: a 9.0.0 server already in its
	// Data Phase takes the copy as one invalid datagram.
	err := exchange(ctx, sock, x.buf, x.deadline, 2, false, func() error { return sock.Send(taOut) },
		func(b []byte, _ netip.AddrPort) (bool, error) {
			if preChecksum(x.pver) {
				if w, ok := widenActivation(b); ok {
					b = w
				}
			}
			if err := granted.Decode(b, legacy); err != nil {
				// A lost response in a downstream test is followed by Load
				// PDUs, each an alert; the report caps them for the run
				// (report.MaxAlerts), as OB-UDPST's ALERT_MSG_LIMIT does.
				x.alert(alertText("test activation response", b) + " [Server" + x.suffix + "]")
				return false, nil
			}
			if x.keyed {
				if c := VerifyResponse(b, x.keys, time.Now()); c != 0 {
					return false, authFailure(c, 150, "test activation response", x.suffix)
				}
			}
			switch granted.CmdResponse {
			case ActivationAccepted:
				return true, nil
			case ActivationBadParam:
				return false, &SetupError{Status: 152, Msg: "ERROR: Requested test parameter(s) rejected by server" + x.suffix}
			}
			return false, &SetupError{Status: 150, Msg: fmt.Sprintf("ERROR: Unexpected CRSP (%d) in test activation response from server%s", granted.CmdResponse, x.suffix)}
		})
	if err != nil {
		return granted, setupErr(ctx, err, x.suffix)
	}
	// What the server granted must be what a server may grant for this
	// request (dataphase.CheckGrant); OB-UDPST's client takes anything.
	if err := dataphase.CheckGrant(grantParams(&ta, legacy), grantParams(&granted, legacy)); err != nil {
		return granted, &SetupError{Status: 150, Msg: "ERROR: " + err.Error() + " in test activation response from server" + x.suffix}
	}
	return granted, nil
}

// setupRequest builds Test Connection index's Setup Request from the
// options.
func setupRequest(cfg *ClientConfig, index int, mcIdent uint16) SetupPDU {
	req := SetupPDU{
		ProtocolVer: cfg.protocol(), MCIndex: uint8(index), MCCount: uint8(max(cfg.ConnMax, 1)),
		MCIdent: mcIdent, CmdRequest: SetupCmdRequest,
	}
	if cfg.MaxBandwidth > 0 {
		req.MaxBandwidth = uint16(max(cfg.MaxBandwidth/max(cfg.ConnMax, 1), 1))
		if cfg.Upstream {
			req.MaxBandwidth |= MaxBandwidthUpstream
		}
	}
	if !cfg.NoJumbo {
		req.ModifierBitmap |= SetupJumbo
	}
	if cfg.TraditionalMTU {
		req.ModifierBitmap |= SetupTraditionalMTU
	}
	return req
}

// grantParams are the Data Phase parameters a Test Activation PDU (the
// client's request or the server's response) stands for, as CheckGrant
// compares them.
func grantParams(a *ActivationPDU, legacy bool) dataphase.Params {
	p := activationParams(a, legacy)
	p.InitialRate = a.Rate
	return p
}

// ErrNoAnswer ends an exchange that got no answer by its deadline: its
// own (SetupTimeout) or ctx's, if sooner. A SetupError for a timeout wraps
// it.
var ErrNoAnswer = errors.New("no response")

// errRefused ends a Setup exchange whose request the server's host
// refused: ICMP port unreachable, nothing listens on the port.
var errRefused = errors.New("connection refused")

// recvErrSocket is a socket that can report ICMP errors while unconnected
// (engine.Socket: IP_RECVERR).
type recvErrSocket interface {
	SetRecvErr(on bool) error
}

// exchange sends a request (sends times at most, resendAfter apart) and
// hands every datagram that arrives before the deadline to handle, until
// handle reports it done or fails. Null PDUs are passed over wherever they
// arrive. ECONNREFUSED (an ICMP error for an earlier send) ends the wait
// with errRefused when refusedEnds (the Setup Request: only the server
// was sent to); otherwise it does not, as OB-UDPST's client waits for its
// timeout too.
func exchange(ctx context.Context, sock Socket, buf []byte, deadline time.Time, sends int, refusedEnds bool,
	send func() error, handle func(b []byte, from netip.AddrPort) (bool, error)) error {
	for try := 1; ; try++ {
		if err := send(); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		wait := deadline
		if try < sends {
			wait = earliest(deadline, time.Now().Add(resendAfter))
		}
		for {
			n, from, err := sock.RecvFrom(buf, wait)
			switch {
			case ctx.Err() != nil:
				if !time.Now().Before(deadline) {
					// ctx's deadline, which is the exchange's too: a
					// timeout, whichever timer saw it first.
					return ErrNoAnswer
				}
				return ctx.Err()
			case errors.Is(err, syscall.ECONNREFUSED) && refusedEnds:
				return errRefused
			case errors.Is(err, syscall.ECONNREFUSED):
				continue
			case errors.Is(err, os.ErrDeadlineExceeded):
				if !time.Now().Before(deadline) {
					return ErrNoAnswer
				}
			case err != nil:
				return err
			case IsNullPDU(buf[:n]):
				continue
			default:
				if done, herr := handle(buf[:n], from); done || herr != nil {
					return herr
				}
				continue
			}
			break // resend
		}
	}
}

// setupErr turns an exchange's failure into the client's SetupError.
func setupErr(ctx context.Context, err error, suffix string) error {
	var se *SetupError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, ErrNoAnswer):
		return &SetupError{Status: dataphase.WarnServerTimeout, Msg: "WARNING: Timeout awaiting response from server" + suffix, cause: ErrNoAnswer}
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errRefused):
		// OB-UDPST's client has no message of its own for this: it times
		// out (status 1, so "Minimum required connections unavailable",
		// exit 200), which this keeps, saying why at once.
		return &SetupError{Status: dataphase.WarnServerTimeout, Msg: "WARNING: Connection refused by server" + suffix + " (ICMP port unreachable: nothing listens on that port)"}
	}
	return &SetupError{Status: 75, Msg: "ERROR: " + err.Error()}
}

// activationRequest builds the Test Activation Request from the options.
func activationRequest(cfg *ClientConfig) ActivationPDU {
	ta := ActivationPDU{
		ProtocolVer:    cfg.protocol(),
		CmdRequest:     ActivationDownstream,
		LowThresh:      uint16(cfg.LowThresh),
		UpperThresh:    uint16(cfg.UpperThresh),
		TrialInt:       uint16(cfg.TrialInt),
		TestIntTime:    uint16(cfg.TestIntTime),
		DSCPECN:        uint8(cfg.DSCPECN),
		SRIndexConf:    cfg.SRIndex,
		HighSpeedDelta: uint8(cfg.HighSpeedDelta),
		SlowAdjThresh:  uint16(cfg.SlowAdjThresh),
		SeqErrThresh:   uint16(cfg.SeqErrThresh),
		IgnoreOooDup:   1,
		RateAdjAlgo:    cfg.Algorithm,
		ECNCEThresh:    uint8(cfg.CEThresh),
		SubIntPeriod:   uint16(cfg.SubIntPeriod),
	}
	if cfg.Upstream {
		ta.CmdRequest = ActivationUpstream
	}
	if cfg.UseOwDelVar {
		ta.UseOwDelVar = 1
	}
	if cfg.IncludeOooDup {
		ta.IgnoreOooDup = 0
	}
	if cfg.StartIndex && cfg.SRIndex != dataphase.AutoRateIndex {
		ta.ModifierBitmap |= ActivationStartIndex
	}
	if cfg.RandomPayload {
		ta.ModifierBitmap |= ActivationRandomPayload
	}
	if cfg.Suppress {
		ta.SRAdjSuppCount = uint16(cfg.Bimodal)
	}
	if len(cfg.Key) > 0 {
		ta.AuthMode = AuthControl
	}
	return ta
}

// accepted adopts what the server granted (every value is read back from
// the response: OB-UDPST 9.0.0's server coerces what it cannot grant
// rather than refuse it, see the package doc) and marks the socket.
func accepted(sock Socket, cfg *ClientConfig, server, peer netip.AddrPort, setup SetupPDU, g ActivationPDU) (*ClientConn, error) {
	now := clock.Now()
	v4 := IsIPv4(peer)
	pver := cfg.protocol()
	p := activationParams(&g, pver < AuthECNProtocolVer)
	if preChecksum(pver) {
		p.Proto = pver
	}
	if pver < AuthECNProtocolVer {
		// Granted speaks milliseconds to its readers, as protocol 20 does.
		g.SubIntPeriod = uint16(p.SubIntPeriod.Milliseconds())
	}
	p.IPv6 = !v4
	p.InitialRate = g.Rate
	p.NoSeqRollback = cfg.NoSeqRollback
	p.AuthMode = g.AuthMode
	p.Seed = uint64(now.Wall) ^ uint64(peer.Port())<<32
	if g.DSCPECN != 0 {
		if err := sock.SetTOS(g.DSCPECN, v4); err != nil {
			return nil, &SetupError{Status: 75, Msg: "ERROR: setting DSCP/ECN: " + err.Error()}
		}
	}
	if g.ECNCEThresh > 0 {
		if err := sock.EnableRecvTOS(v4); err != nil {
			return nil, &SetupError{Status: 75, Msg: "ERROR: enabling ECN reception: " + err.Error()}
		}
	}
	return &ClientConn{
		Sock: sock, Server: server, TestPeer: peer, Local: sock.LocalAddr(),
		Setup: setup, Granted: g, Params: p, Activated: now,
	}, nil
}

func authFailure(code uint8, base int, what, suffix string) error {
	if code == SetupAuthTime {
		return &SetupError{Status: base + 8, Msg: "ERROR: Authentication time invalid in " + what + " from server" + suffix}
	}
	return &SetupError{Status: base + 7, Msg: "ERROR: Authentication failure of " + what + " from server" + suffix}
}

// setupRefused maps a Setup Response code to OB-UDPST's message and
// ErrorStatus (100 + code; 100 for a code it does not know).
func setupRefused(code uint8, serverVer uint16, suffix string) error {
	text := SetupCodeText(code)
	if code == SetupBadVersion {
		text = fmt.Sprintf("Client protocol version (%d) not accepted by server (%d)", ProtocolVersion, serverVer)
	}
	if text == "" || code == SetupAccepted || code == SetupNone {
		return &SetupError{Status: 100, Msg: fmt.Sprintf("ERROR: Unexpected CRSP (%d) in setup response from server%s", code, suffix)}
	}
	return &SetupError{Status: 100 + int(code), Msg: "ERROR: " + text + suffix}
}

// alertText is OB-UDPST's ALERT line for an invalid control response.
func alertText(what string, b []byte) string {
	var id, ver, ck uint16
	if len(b) >= 4 {
		id, ver = binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:])
	}
	if len(b) >= 2 {
		ck = binary.BigEndian.Uint16(b[len(b)-2:])
	}
	return fmt.Sprintf("ALERT: Received invalid %s (%d,0x%04X:0x%04X,0x%04X)", what, len(b), id, ver, ck)
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
