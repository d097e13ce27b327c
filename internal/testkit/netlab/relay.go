package netlab

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The relay's devices and routing in the router namespace (see Relay in
// the package doc).
const (
	tunUpDev   = "tun-up"   // carries Up: what arrives on routerClientDev
	tunDownDev = "tun-down" // carries Down: what arrives on routerServerDev
	// relayTableUp and relayTableDown route everything into the devices.
	relayTableUp   = 101
	relayTableDown = 102
	// relayRulePref sends what arrives on the veths to the tables, ahead
	// of the local table, which moves from 0 to localRulePref: a packet
	// for the router's own address (the NAT's, on its way back) crosses
	// the relay like the rest.
	relayRulePref = 10
	localRulePref = 100
	// relayTxQueueLen is the TUN devices' queue: what the kernel holds
	// while the relay thread is busy writing or not scheduled. 10000
	// datagrams are 100 ms at 1 Gbit/s of 1250-byte packets (500, the
	// default, would be 5 ms: one scheduling hiccup on a busy machine).
	relayTxQueueLen = 10000
	// relayBufferBytes sizes each direction's delay line: 32 MiB hold a
	// quarter of a second at 1 Gbit/s, above the longest delay the lab's
	// cases use (75 ms each way) at any rate the machine can forward.
	relayBufferBytes = 32 << 20
)

// relaySlotsForTest, when set (tests only), sizes the delay lines.
var relaySlotsForTest int

// RelayStats are the relay's counters for one direction since Build.
// Packets are IP packets (a fragment is one). The relay's own drops
// (QueueFull, ReadErrors, WriteErrors, Oversize, TunDropped) are never
// part of an impairment: a run with OwnDrops > 0 measured the relay.
type RelayStats struct {
	Read    int64 // packets read from the TUN device, but Ignored
	Written int64 // packets written back, duplicates included
	Matched int64 // packets the Scope selected (Load PDUs by default)
	Ignored int64 // multicast the router itself sent into the device (MLD), dropped

	// What the impairment did on purpose, to matching packets.
	Lost       int64 // dropped by the Gilbert-Elliott model
	Duplicated int64 // extra copies written
	Reordered  int64 // written after a matching packet that arrived later

	// What the relay dropped on its own.
	QueueFull   int64 // read while the delay line was full
	ReadErrors  int64
	WriteErrors int64
	Oversize    int64 // longer than the device's MTU (cannot happen)
	TunDropped  int64 // dropped by the kernel before the relay read them: the TUN queue was full

	Queued, MaxQueued int64         // packets in the delay line now, and at most
	LateMean, LateMax time.Duration // how late packets left after their release time
	LateSlips         int64         // packets that left RelaySlip or more late
	RealTime          bool          // the relay thread got real-time priority (SCHED_FIFO)
}

// OwnDrops is every packet the relay lost that no impairment asked for.
func (s RelayStats) OwnDrops() int64 {
	return s.QueueFull + s.ReadErrors + s.WriteErrors + s.Oversize + s.TunDropped
}

// RelaySlip is how late a packet may leave the relay before it counts as
// a slip (RelayStats.LateSlips): a quarter of the shortest round trip
// the lab's cases use (20 ms) and a sixth of the 30 ms delay variation
// that makes a rate search back off. Under a few ms the relay's lateness
// shifts no result (measured: cases with 2 % of packets a millisecond
// late read within 0.1 % of the shape).
const RelaySlip = 5 * time.Millisecond

// Kept reports whether the relay kept up with what it carried: it dropped
// nothing on its own, and at most 1 % of the packets slipped (left
// RelaySlip or more after their time). A relay that slips adds delay
// variation of its own, which a rate search reads as congestion: a run
// through a relay that did not keep up measured the relay.
func (s RelayStats) Kept() bool { return s.OwnDrops() == 0 && s.LateSlips*100 <= s.Read }

// tunDev is the relay device of dir.
func tunDev(dir Direction) string {
	if dir == Up {
		return tunUpDev
	}
	return tunDownDev
}

// tunMTU is the MTU of the relay's devices: the lab's, or the narrow
// link's when it is the one in the middle.
func (c Config) tunMTU() int {
	if c.Narrow.MTU > 0 && c.Narrow.Link == NarrowMiddle {
		return c.Narrow.MTU
	}
	return c.MTU
}

// addRelay puts the relay into the router's path: its two TUN devices,
// the policy routing that sends each direction through its device, and the
// relay threads.
func (l *Lab) addRelay() error {
	if !l.cfg.usesRelay() {
		return nil
	}
	mtu := l.cfg.tunMTU()
	slots := max(relayBufferBytes/(mtu+1), 1024)
	if relaySlotsForTest > 0 {
		slots = relaySlotsForTest
	}
	r, err := newRelay(l, mtu, slots, [2]Impairment{Down: l.cfg.Down.Relay, Up: l.cfg.Up.Relay}, l.cfg.Seed)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.relay = r
	l.mu.Unlock()
	ip := func(args ...string) error {
		_, err := run(nil, l.tools.ip, append([]string{"-n", l.RouterNS}, args...)...)
		return err
	}
	for _, dev := range []string{tunUpDev, tunDownDev} {
		args := []string{"link", "set", "dev", dev, "mtu", strconv.Itoa(mtu), "txqueuelen", strconv.Itoa(relayTxQueueLen)}
		if l.addrs.client6.IsValid() {
			// No link-local address: the router would otherwise send
			// its own MLD reports through the relay.
			args = append(args, "addrgenmode", "none")
		}
		if err := ip(args...); err != nil {
			return err
		}
		if err := ip("link", "set", "dev", dev, "up"); err != nil {
			return err
		}
	}
	families := []string{"-4"}
	if l.addrs.client6.IsValid() {
		families = append(families, "-6")
	}
	for _, f := range families {
		pref := func(n int) string { return strconv.Itoa(n) }
		// Only what is addressed into the lab's ranges crosses the relay:
		// not the link-local multicast the endpoints send (MLD reports).
		to := labRange4.String()
		if f == "-6" {
			to = labRange6.String()
		}
		for _, args := range [][]string{
			{f, "rule", "add", "pref", pref(localRulePref), "lookup", "local"},
			{f, "rule", "del", "pref", "0", "lookup", "local"},
			{f, "rule", "add", "pref", pref(relayRulePref), "iif", routerClientDev, "to", to, "lookup", pref(relayTableUp)},
			{f, "rule", "add", "pref", pref(relayRulePref), "iif", routerServerDev, "to", to, "lookup", pref(relayTableDown)},
			{f, "route", "add", "default", "dev", tunUpDev, "table", pref(relayTableUp)},
			{f, "route", "add", "default", "dev", tunDownDev, "table", pref(relayTableDown)},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	r.start()
	return nil
}

// closeRelay stops the relay threads and closes the devices.
func (l *Lab) closeRelay() error {
	l.mu.Lock()
	r := l.relay
	l.relay = nil
	l.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.close()
}

// Impair changes the relay's impairment of dir while the lab is up; the
// packets read from then on get it (those in the delay line keep their
// release times). The relay must be in the path (see Config.Relay).
func (l *Lab) Impair(dir Direction, m Impairment) error {
	m, err := m.normalize()
	if err != nil {
		return fmt.Errorf("netlab: %v relay: %w", dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.impairLocked(dir, m); err != nil {
		return err
	}
	l.cfg.dirShape(dir).Relay = m
	return nil
}

// impairLocked hands m (normalized) to the relay; l.mu is held.
func (l *Lab) impairLocked(dir Direction, m Impairment) error {
	if l.closed {
		return errors.New("netlab: Impair on a closed lab")
	}
	if dir != Down && dir != Up {
		return fmt.Errorf("netlab: unknown direction %d", int(dir))
	}
	if l.relay == nil {
		if !m.active() {
			return nil
		}
		return errors.New("netlab: no relay in this lab's path (set Config.Relay, or an impairment, at Build)")
	}
	l.relay.impair(dir, m)
	return nil
}

// RelayStats returns the relay's counters for dir, with the drops of its
// TUN device's queue; an error if the relay thread of dir has stopped
// (then nothing crosses the relay).
func (l *Lab) RelayStats(dir Direction) (RelayStats, error) {
	if dir != Down && dir != Up {
		return RelayStats{}, fmt.Errorf("netlab: unknown direction %d", int(dir))
	}
	l.mu.Lock()
	r := l.relay
	l.mu.Unlock()
	if r == nil {
		return RelayStats{}, errors.New("netlab: no relay in this lab's path")
	}
	s, err := r.stats(dir)
	if err != nil {
		return s, err
	}
	rx, tx, err := l.linkDropped(l.RouterNS, tunDev(dir))
	if err != nil {
		return s, err
	}
	// tx: the kernel's queue into the device was full; rx: a packet the
	// relay wrote could not be taken.
	s.TunDropped = rx + tx
	return s, nil
}
