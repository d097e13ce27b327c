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
}

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
	return c, nil
}

// usesLoss reports whether any direction needs nftables.
func (c Config) usesLoss() bool { return c.Down.LossPct > 0 || c.Up.LossPct > 0 }

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
