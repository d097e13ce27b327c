package netlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// lossTable is the nftables table (family inet) holding the loss rule in
// the receiving namespace; lossCounter counts its drops.
const (
	lossTable   = "udpstp_lab"
	lossCounter = "lost"
)

// loadPDUID is the Load PDU identifier, the first two bytes of its UDP
// payload in network byte order (dataphase.LoadPDUID; RFC 9946, the Load
// PDU). Not imported, so the lab does not depend on code under test.
const loadPDUID = 0xBEEF

// ends returns the namespace and device whose egress carries dir (the
// router's veth towards the receiver, where tbf goes) and the namespace
// that receives it (where loss goes).
func (l *Lab) ends(dir Direction) (txNS, txDev, rxNS string, err error) {
	switch dir {
	case Down:
		return l.RouterNS, routerClientDev, l.ClientNS, nil
	case Up:
		return l.RouterNS, routerServerDev, l.ServerNS, nil
	}
	return "", "", "", fmt.Errorf("netlab: unknown direction %d", int(dir))
}

// Shape changes the shaping, loss and relay impairment of one direction
// while the lab is up: tbf is replaced (tc qdisc replace, which changes an
// installed tbf in place and keeps its queue and counters) or removed,
// the loss table is replaced or removed, which resets LossDropped, and the
// relay gets s.Relay (see Impair).
func (l *Lab) Shape(dir Direction, s Shape) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: Shape on a closed lab")
	}
	s, err := s.normalize(l.cfg.MTU)
	if err != nil {
		return fmt.Errorf("netlab: %v shape: %w", dir, err)
	}
	if s.LossPct > 0 {
		if err := AvailableFor(Config{Down: s}); err != nil {
			return err
		}
	}
	if err := l.impairLocked(dir, s.Relay); err != nil {
		return err
	}
	if err := l.applyShape(dir, s); err != nil {
		return err
	}
	*l.cfg.dirShape(dir) = s
	return nil
}

// SetRate changes the tbf rate of dir in the middle of a test (tc qdisc
// change: the queue and the counters stay), keeping the rest of its
// Shape; a burst left at its default follows the new rate. dir must be
// shaped already: a rate step needs a tbf to step.
func (l *Lab) SetRate(dir Direction, rateBps int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: SetRate on a closed lab")
	}
	txNS, txDev, _, err := l.ends(dir)
	if err != nil {
		return err
	}
	s := *l.cfg.dirShape(dir)
	if s.RateBps == 0 || !l.tbfOn[dir] {
		return fmt.Errorf("netlab: SetRate: %v is not shaped", dir)
	}
	if s.Burst == DefaultBurst(s.RateBps, l.cfg.MTU) {
		s.Burst = 0
	}
	s.RateBps = rateBps
	if s, err = s.normalize(l.cfg.MTU); err != nil {
		return fmt.Errorf("netlab: %v rate: %w", dir, err)
	}
	if s.RateBps == 0 {
		return fmt.Errorf("netlab: SetRate to 0: use Shape to remove tbf")
	}
	if _, err := run(nil, l.tools.tc, append([]string{"-n", txNS, "qdisc", "change", "dev", txDev, "root"}, tbfArgs(s)...)...); err != nil {
		return err
	}
	*l.cfg.dirShape(dir) = s
	return nil
}

// tbfArgs are the tc arguments of s's tbf.
func tbfArgs(s Shape) []string {
	return []string{"tbf",
		"rate", strconv.FormatInt(s.RateBps, 10) + "bit",
		"burst", strconv.Itoa(s.Burst),
		"latency", strconv.FormatInt(max(s.Latency.Microseconds(), 1), 10) + "us"}
}

// applyShape installs s (normalized) for dir, replacing or removing what
// an earlier call installed; l.mu is held or the lab is being built.
func (l *Lab) applyShape(dir Direction, s Shape) error {
	txNS, txDev, rxNS, err := l.ends(dir)
	if err != nil {
		return err
	}
	switch {
	case s.RateBps > 0:
		_, err = run(nil, l.tools.tc, append([]string{"-n", txNS, "qdisc", "replace", "dev", txDev, "root"}, tbfArgs(s)...)...)
	case l.tbfOn[dir]:
		_, err = run(nil, l.tools.tc, "-n", txNS, "qdisc", "delete", "dev", txDev, "root")
	}
	if err != nil {
		return err
	}
	l.tbfOn[dir] = s.RateBps > 0
	if s.LossPct > 0 || l.lossOn[dir] {
		if _, err := run([]byte(lossRuleset(s)), l.tools.ip, "netns", "exec", rxNS, l.tools.nft, "-f", "-"); err != nil {
			return err
		}
	}
	l.lossOn[dir] = s.LossPct > 0
	return nil
}

// lossRuleset returns an nft script that atomically replaces the loss
// table with one for s, or deletes it when s has no loss. The leading
// `table` makes the `delete` succeed when the table does not exist yet.
func lossRuleset(s Shape) string {
	script := fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", lossTable)
	if s.LossPct == 0 {
		return script
	}
	match := "meta l4proto udp"
	if s.LossScope == LossLoadPDUs {
		// @th,64,16: the 16 bits at bit offset 64 from the transport
		// header, i.e. the first two bytes after the 8-byte UDP header.
		match += fmt.Sprintf(" @th,64,16 0x%04x", loadPDUID)
	}
	// numgen's value is 0..9999, so 100 % needs no random draw (and nft
	// rejects the constant 10000).
	if n := s.lossThreshold(); n < 10000 {
		match += fmt.Sprintf(" numgen random mod 10000 < %d", n)
	}
	return script + fmt.Sprintf(`table inet %s {
	counter %s { }
	chain input {
		type filter hook input priority filter; policy accept;
		%s counter name %s drop
	}
}
`, lossTable, lossCounter, match, lossCounter)
}

// QdiscStats are the counters of the root qdisc on a direction's egress
// (tbf when shaped), as `tc -s qdisc` shows them. Bytes are metered frame
// bytes (Ethernet header included, no FCS) and a GSO skb counts as its
// segments, so Bytes is the ground truth of what the shape let through.
type QdiscStats struct {
	Kind       string `json:"kind"`
	Bytes      int64  `json:"bytes"`
	Packets    int64  `json:"packets"`
	Drops      int64  `json:"drops"`      // dropped at enqueue: queue full or frame above the burst
	Overlimits int64  `json:"overlimits"` // times a frame had to wait for tokens
	Requeues   int64  `json:"requeues"`
	Backlog    int64  `json:"backlog"` // bytes queued now
	Qlen       int64  `json:"qlen"`    // frames queued now
}

// QdiscStats reads the counters of the root qdisc of dir. They start at
// zero when the lab is built; a Shape that replaces tbf keeps them, one
// that removes it loses them.
func (l *Lab) QdiscStats(dir Direction) (QdiscStats, error) {
	txNS, txDev, _, err := l.ends(dir)
	if err != nil {
		return QdiscStats{}, err
	}
	out, err := run(nil, l.tools.tc, "-n", txNS, "-s", "-j", "qdisc", "show", "dev", txDev)
	if err != nil {
		return QdiscStats{}, err
	}
	var qs []struct {
		QdiscStats
		Root bool `json:"root"`
	}
	if err := json.Unmarshal(out, &qs); err != nil {
		return QdiscStats{}, fmt.Errorf("netlab: parsing tc -j output %q: %w", out, err)
	}
	for _, q := range qs {
		if q.Root {
			return q.QdiscStats, nil
		}
	}
	return QdiscStats{}, fmt.Errorf("netlab: no root qdisc on %s in %s: %s", txDev, txNS, out)
}

// LossDropped returns how many datagrams (and IP bytes, without the
// Ethernet header) the loss rule of dir has dropped since the last Shape
// of dir, or since Build. Without loss it returns zeros.
func (l *Lab) LossDropped(dir Direction) (packets, bytes int64, err error) {
	_, _, rxNS, err := l.ends(dir)
	if err != nil {
		return 0, 0, err
	}
	l.mu.Lock()
	s := *l.cfg.dirShape(dir)
	l.mu.Unlock()
	if s.LossPct == 0 {
		return 0, 0, nil
	}
	return l.nftCounter(rxNS, lossTable, lossCounter)
}

// LinkDrops returns how many frames the veth links themselves dropped
// (receive and transmit drops of all four ends, e.g. a full backlog in a
// namespace that cannot keep up) since Build. Unlike tbf and loss drops
// these are not part of the lab's ground truth: a run with LinkDrops > 0
// measured the machine, not the shape.
func (l *Lab) LinkDrops() (int64, error) {
	var total int64
	for _, e := range l.linkEnds() {
		rx, tx, err := l.linkDropped(e.ns, e.dev)
		if err != nil {
			return 0, err
		}
		total += rx + tx
	}
	return total, nil
}

// linkDropped reads the receive and transmit drop counters of dev in ns.
func (l *Lab) linkDropped(ns, dev string) (rx, tx int64, err error) {
	out, err := run(nil, l.tools.ip, "-n", ns, "-s", "-j", "link", "show", "dev", dev)
	if err != nil {
		return 0, 0, err
	}
	var links []struct {
		Stats struct {
			RX struct {
				Dropped int64 `json:"dropped"`
			} `json:"rx"`
			TX struct {
				Dropped int64 `json:"dropped"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return 0, 0, fmt.Errorf("netlab: parsing ip -s -j link output %q: %v", out, err)
	}
	return links[0].Stats.RX.Dropped, links[0].Stats.TX.Dropped, nil
}
