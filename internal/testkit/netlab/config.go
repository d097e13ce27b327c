package netlab

import (
	"fmt"
	"math"
	"time"
)

// Config describes a lab. The zero value is an unshaped, lossless lab with
// a 1500-byte MTU.
type Config struct {
	// MTU is the IP MTU of both veth ends: 1500 (default when 0) or 9000.
	MTU int
	// Down shapes the server-to-client direction (tbf on the router's
	// egress towards the client, loss on the client namespace's input).
	Down Shape
	// Up shapes the client-to-server direction (tbf on the router's
	// egress towards the server, loss on the server namespace's input).
	Up Shape
	// Relay puts the TUN relay in the router's path even when neither
	// direction has a Relay impairment: for its baseline, or to impair
	// later with Impair. A Shape.Relay or a Narrow link in the middle puts
	// it there anyway.
	Relay bool
	// Seed seeds the relay's decisions: the same seed and the same
	// traffic give the same losses, duplicates and holds.
	Seed uint64
	// NAT translates the client's address (and ports) in the router, on
	// the way to the server.
	NAT NAT
	// FirewallPort, when not 0, puts a stateful firewall in front of the
	// server (on its namespace's input, as a host firewall or a cloud
	// security group): it admits new flows only to this UDP port (the
	// control port), and otherwise only packets of flows already
	// established (or related ICMP errors). The server's Null Request is
	// what opens the way for the Test Connection.
	FirewallPort int
	// Narrow makes one link of the path narrower than MTU, so that the
	// router answers larger packets with ICMP "fragmentation needed"
	// (IPv4, DF set) or "packet too big" (IPv6).
	Narrow Narrow
}

// NAT is the address translation in the router.
type NAT int

const (
	// NoNAT routes the client's address unchanged.
	NoNAT NAT = iota
	// Masquerade rewrites the client's source to the router's address on
	// the server link (nftables masquerade), keeping the source port
	// where it can: the Setup and the Test Activation of one client
	// socket leave from the same external port.
	Masquerade
	// MasqueradeRandom is Masquerade with a random external port for
	// every new flow (masquerade random), as many carrier-grade NATs do:
	// the Setup and the Test Activation, sent to different server ports,
	// leave from different external ports.
	MasqueradeRandom
)

func (n NAT) String() string {
	switch n {
	case NoNAT:
		return "none"
	case Masquerade:
		return "masquerade"
	case MasqueradeRandom:
		return "masquerade random"
	}
	return fmt.Sprintf("NAT(%d)", int(n))
}

// Narrow is a link of smaller MTU in the path.
type Narrow struct {
	// MTU is the narrow link's IP MTU, from MinNarrowMTU to below
	// Config.MTU; 0 means no narrow link.
	MTU int
	// Link says which link is narrow.
	Link NarrowLink
}

// NarrowLink names the narrow link.
type NarrowLink int

const (
	// NarrowMiddle narrows the relay's TUN devices, the link in the middle
	// of the router: both endpoints keep a full-size link, so the router
	// answers oversized packets in both directions. It puts the relay in
	// the path.
	NarrowMiddle NarrowLink = iota
	// NarrowClientLink narrows the client's link (both of its ends): the
	// router answers the server's oversized packets; the client's own
	// kernel limits what it sends.
	NarrowClientLink
	// NarrowServerLink narrows the server's link: the router answers the
	// client's oversized packets.
	NarrowServerLink
)

// MinNarrowMTU is the smallest narrow MTU: IPv6's minimum link MTU.
const MinNarrowMTU = 1280

// Shape is the impairment of one direction.
type Shape struct {
	// RateBps is the tbf rate in bits/s of Ethernet frames without FCS
	// (see the package doc); 0 leaves the direction unshaped.
	RateBps int64
	// Burst is the tbf bucket in bytes; 0 picks DefaultBurst. It must hold
	// a full frame (MTU + 14).
	Burst int
	// Latency bounds the tbf queue: frames that would wait longer are
	// dropped. 0 means DefaultLatency.
	Latency time.Duration
	// LossPct is the probability in percent (0..100, resolution 0.01) that
	// a matching datagram is dropped at the receiving namespace's input;
	// 0 disables loss. Loss works without a rate.
	LossPct float64
	// LossScope says which datagrams LossPct applies to.
	LossScope LossScope
	// Relay is what the relay in the router does to this direction before
	// tbf: delay, jitter, reordering, duplication, burst loss. Any of it
	// puts the relay in the path.
	Relay Impairment
}

// LossScope selects the datagrams random loss applies to.
type LossScope int

const (
	// LossLoadPDUs drops only UDP datagrams whose payload starts with the
	// Load PDU identifier 0xBEEF, so that control, Null and Status PDUs
	// get through and the loss ratio is the Load PDU loss ratio.
	LossLoadPDUs LossScope = iota
	// LossAllUDP drops any UDP datagram (IPv4 or IPv6) in the direction.
	LossAllUDP
)

// Direction names one direction of the lab.
type Direction int

const (
	// Down is server to client.
	Down Direction = iota
	// Up is client to server.
	Up
)

func (d Direction) String() string {
	switch d {
	case Down:
		return "down"
	case Up:
		return "up"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

const (
	// DefaultMTU is the MTU when Config.MTU is 0.
	DefaultMTU = 1500
	// JumboMTU is the other MTU the lab supports.
	JumboMTU = 9000
	// DefaultLatency is the tbf latency (queue bound) when Shape.Latency
	// is 0: deep enough for a rate search to overshoot without loss for a
	// few trial intervals, short enough to see queueing delay grow.
	DefaultLatency = 50 * time.Millisecond
	// EthHeader is the part of the frame tbf meters on top of the IP
	// packet: the 14-byte Ethernet header (no FCS, no VLAN tag).
	EthHeader = 14
	// burstFrames and burstTime set DefaultBurst; see the package doc.
	burstFrames = 4
	burstTime   = time.Millisecond
)

// DefaultBurst is the tbf burst used when Shape.Burst is 0: the larger of
// 1 ms at rateBps and 4 frames of mtu+14 bytes (see the package doc for
// why both bounds).
func DefaultBurst(rateBps int64, mtu int) int {
	b := burstFrames * (mtu + EthHeader)
	perMs := int64(math.Ceil(float64(rateBps) / 8 * burstTime.Seconds()))
	if perMs > int64(b) {
		if perMs > math.MaxInt32 {
			return math.MaxInt32
		}
		return int(perMs)
	}
	return b
}

// normalize fills the defaults of c and checks it.
func (c Config) normalize() (Config, error) {
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.MTU != DefaultMTU && c.MTU != JumboMTU {
		return c, fmt.Errorf("netlab: MTU %d: want %d or %d", c.MTU, DefaultMTU, JumboMTU)
	}
	var err error
	if c.Down, err = c.Down.normalize(c.MTU); err != nil {
		return c, fmt.Errorf("netlab: Down shape: %w", err)
	}
	if c.Up, err = c.Up.normalize(c.MTU); err != nil {
		return c, fmt.Errorf("netlab: Up shape: %w", err)
	}
	switch {
	case c.NAT < NoNAT || c.NAT > MasqueradeRandom:
		return c, fmt.Errorf("netlab: unknown NAT %d", int(c.NAT))
	case c.FirewallPort < 0 || c.FirewallPort > 65535:
		return c, fmt.Errorf("netlab: firewall port %d outside 1..65535", c.FirewallPort)
	case c.Narrow.Link < NarrowMiddle || c.Narrow.Link > NarrowServerLink:
		return c, fmt.Errorf("netlab: unknown narrow link %d", int(c.Narrow.Link))
	case c.Narrow.MTU != 0 && (c.Narrow.MTU < MinNarrowMTU || c.Narrow.MTU >= c.MTU):
		return c, fmt.Errorf("netlab: narrow MTU %d: want %d to %d", c.Narrow.MTU, MinNarrowMTU, c.MTU-1)
	case c.Narrow.MTU == 0 && c.Narrow.Link != NarrowMiddle:
		return c, fmt.Errorf("netlab: a narrow link without an MTU")
	}
	return c, nil
}

// dirShape returns the Shape of dir in c (Down for anything but Up: the
// callers have checked dir).
func (c *Config) dirShape(dir Direction) *Shape {
	if dir == Up {
		return &c.Up
	}
	return &c.Down
}

// usesLoss reports whether any direction needs nftables for loss.
func (c Config) usesLoss() bool { return c.Down.LossPct > 0 || c.Up.LossPct > 0 }

// usesNft reports whether the lab needs nftables at all.
func (c Config) usesNft() bool { return c.usesLoss() || c.NAT != NoNAT || c.FirewallPort != 0 }

// usesRelay reports whether the relay is in the path.
func (c Config) usesRelay() bool {
	return c.Relay || c.Down.Relay.active() || c.Up.Relay.active() || (c.Narrow.MTU > 0 && c.Narrow.Link == NarrowMiddle)
}

// normalize fills the defaults of s for a link of the given MTU and checks
// it. An unshaped direction keeps Burst and Latency at 0.
func (s Shape) normalize(mtu int) (Shape, error) {
	switch {
	case s.RateBps < 0:
		return s, fmt.Errorf("rate %d bit/s is negative", s.RateBps)
	case s.RateBps > 0 && s.RateBps < 8:
		return s, fmt.Errorf("rate %d bit/s is below tc's 1 byte/s", s.RateBps)
	case s.Burst < 0:
		return s, fmt.Errorf("burst %d is negative", s.Burst)
	case s.Latency < 0:
		return s, fmt.Errorf("latency %v is negative", s.Latency)
	case math.IsNaN(s.LossPct) || s.LossPct < 0 || s.LossPct > 100:
		return s, fmt.Errorf("loss %v%% is outside 0..100", s.LossPct)
	case s.LossScope != LossLoadPDUs && s.LossScope != LossAllUDP:
		return s, fmt.Errorf("unknown loss scope %d", s.LossScope)
	}
	var err error
	if s.Relay, err = s.Relay.normalize(); err != nil {
		return s, fmt.Errorf("relay: %w", err)
	}
	if s.RateBps == 0 {
		if s.Burst != 0 || s.Latency != 0 {
			return s, fmt.Errorf("burst or latency set without a rate")
		}
		return s, nil
	}
	if s.Burst == 0 {
		s.Burst = DefaultBurst(s.RateBps, mtu)
	}
	if frame := mtu + EthHeader; s.Burst < frame {
		return s, fmt.Errorf("burst %d bytes cannot hold a %d-byte frame: tbf would drop every full-size frame", s.Burst, frame)
	}
	if s.Latency == 0 {
		s.Latency = DefaultLatency
	}
	return s, nil
}

// lossThreshold is N in `numgen random mod 10000 < N`.
func (s Shape) lossThreshold() int { return int(math.Round(s.LossPct * 100)) }
