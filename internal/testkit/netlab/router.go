package netlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The router's nftables tables (family inet: IPv4 and IPv6 alike).
const (
	routerTable     = "udpstp_router" // NAT and the relay's notrack
	firewallTable   = "udpstp_fw"     // in the server namespace
	refusedCounter  = "refused"       // the firewall's drops
	cutTable        = "udpstp_cut"    // Cut: every packet dropped
	cutCounter      = "cut"
	natPriority     = "srcnat"
	filterPriority  = "filter"
	notrackPriority = "raw"
)

// routerRuleset returns the nft script of the router's NAT for c, or ""
// when c has none.
//
// With the relay, each packet crosses the router twice: from a veth into
// its TUN device, then, written back, from the device to the other veth.
// Only the second crossing may be tracked, or conntrack would make its NAT
// decision on the first, whose output device is the TUN, and keep it for
// the second: the first crossing is marked notrack. A reply to the NAT's
// address is routed into the relay before the local table (see
// relayRulePref), so it too is untranslated until it comes back out of
// the device, where conntrack finds its flow and restores the client's
// address.
//
// As every NAT gateway's firewall, the router drops, silently, what the
// server side sends it unsolicited (a new flow to its own address). That
// matters: the server's Null Request, sent from its test port to the
// Setup's external port, has no NAT mapping (the mapping is the control
// port's); accepted and answered with port unreachable, it would leave a
// conntrack entry that takes that external port, and the Test Activation
// would leave from another one, which a firewall in front of the server
// refuses. Dropped before conntrack confirms it, it leaves nothing.
func routerRuleset(c Config) string {
	if c.NAT == NoNAT {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %[1]s\ndelete table inet %[1]s\ntable inet %[1]s {\n", routerTable)
	if c.usesRelay() {
		fmt.Fprintf(&b, "\tchain first_pass {\n\t\ttype filter hook prerouting priority %s; policy accept;\n\t\tiifname { \"%s\", \"%s\" } notrack\n\t}\n",
			notrackPriority, routerClientDev, routerServerDev)
	}
	masq := "masquerade"
	if c.NAT == MasqueradeRandom {
		masq += " random"
	}
	fmt.Fprintf(&b, "\tchain masq {\n\t\ttype nat hook postrouting priority %s; policy accept;\n\t\toifname \"%s\" %s\n\t}\n", natPriority, routerServerDev, masq)
	// With the relay, what the server side sends comes in (the second
	// time) from tun-down.
	fmt.Fprintf(&b, "\tchain wan_in {\n\t\ttype filter hook input priority %s; policy accept;\n\t\tiifname { \"%s\", \"%s\" } ct state new drop\n\t}\n}\n",
		filterPriority, routerServerDev, tunDownDev)
	return b.String()
}

// firewallRuleset returns the nft script of the firewall in front of the
// server for c, or "". It sits on the server namespace's input hook, as a
// host firewall or a cloud security group does, not in the router: there
// it would share conntrack with the NAT, and the server's Null Request,
// which finds no NAT mapping (it comes from the test port, the mapping is
// the control port's), would take the NAT's external port for itself, so
// the Test Activation would leave from another and be refused: a clash no
// two separate devices have.
func firewallRuleset(c Config) string {
	if c.FirewallPort == 0 {
		return ""
	}
	return fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	counter %[2]s { }
	chain guard {
		type filter hook input priority %[3]s; policy accept;
		iifname "%[4]s" ct state established,related accept
		iifname "%[4]s" ct state new udp dport %[5]d accept
		iifname "%[4]s" counter name %[2]s drop
	}
}
`, firewallTable, refusedCounter, filterPriority, serverDev, c.FirewallPort)
}

// addRouterRules installs the router's NAT and the server's firewall.
func (l *Lab) addRouterRules() error {
	for _, r := range []struct{ ns, script string }{
		{l.RouterNS, routerRuleset(l.cfg)},
		{l.ServerNS, firewallRuleset(l.cfg)},
	} {
		if r.script == "" {
			continue
		}
		if _, err := run([]byte(r.script), l.tools.ip, "netns", "exec", r.ns, l.tools.nft, "-f", "-"); err != nil {
			return err
		}
	}
	return nil
}

// FirewallRefused returns how many packets the firewall in front of the
// server has dropped since Build (0 without a firewall).
func (l *Lab) FirewallRefused() (int64, error) {
	if l.Config().FirewallPort == 0 {
		return 0, nil
	}
	p, _, err := l.nftCounter(l.ServerNS, firewallTable, refusedCounter)
	return p, err
}

// Cut cuts the path between client and server (on: every packet the
// router would forward or send, ICMP errors included, is dropped silently,
// both ways, as when a link goes down) or mends it (off). What is in the
// relay's delay line when the path is cut still leaves it, into the cut.
// CutDropped counts the forwarded packets dropped, not the router's own.
func (l *Lab) Cut(on bool) error {
	return l.cut0(on, 0)
}

// CutFor cuts the path as Cut(true) does for exactly d: the kernel mends it
// by itself when d is over (an nftables set element that times out), so
// the outage is d however late this process, or the nft that installs it,
// runs on a busy machine (two nft runs around a sleep made a 2 s cut last
// over 4 under load, past the 3 s watchdog). Call Cut(false) afterwards to
// remove the table; CutDropped still counts until then.
func (l *Lab) CutFor(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("netlab: CutFor(%v): want a positive duration", d)
	}
	return l.cut0(true, d)
}

// cut0 installs the cut (on; for d, or until mended when d is 0) or
// removes it. Every packet carries mark 0 here, so the set's one element
// matches them all while it lives.
func (l *Lab) cut0(on bool, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: Cut on a closed lab")
	}
	if err := nftAvailable(); err != nil {
		return err
	}
	script := fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", cutTable)
	if on {
		elem, flags := "0x0", ""
		if d > 0 {
			elem = fmt.Sprintf("0x0 timeout %dms", max(d.Milliseconds(), 1))
			flags = "flags timeout"
		}
		script += fmt.Sprintf(`table inet %[1]s {
	counter %[2]s { }
	set on {
		type mark
		%[3]s
		elements = { %[4]s }
	}
	chain forward {
		type filter hook forward priority -300; policy accept;
		meta mark @on counter name %[2]s drop
	}
	chain output {
		type filter hook output priority -300; policy accept;
		meta mark @on drop
	}
}
`, cutTable, cutCounter, flags, elem)
	}
	_, err := run([]byte(script), l.tools.ip, "netns", "exec", l.RouterNS, l.tools.nft, "-f", "-")
	if err == nil {
		l.cut = on
	}
	return err
}

// CutDropped returns how many packets the current cut has dropped (0 when
// the path is whole).
func (l *Lab) CutDropped() (int64, error) {
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if !cut {
		return 0, nil
	}
	p, _, err := l.nftCounter(l.RouterNS, cutTable, cutCounter)
	return p, err
}

// nftCounter reads named counter name of table (family inet) in ns.
func (l *Lab) nftCounter(ns, table, name string) (packets, bytes int64, err error) {
	out, err := run(nil, l.tools.ip, "netns", "exec", ns, l.tools.nft, "-j", "list", "counter", "inet", table, name)
	if err != nil {
		return 0, 0, err
	}
	var doc struct {
		Nftables []struct {
			Counter *struct {
				Packets int64 `json:"packets"`
				Bytes   int64 `json:"bytes"`
			} `json:"counter"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return 0, 0, fmt.Errorf("netlab: parsing nft -j output %q: %w", out, err)
	}
	for _, e := range doc.Nftables {
		if e.Counter != nil {
			return e.Counter.Packets, e.Counter.Bytes, nil
		}
	}
	return 0, 0, fmt.Errorf("netlab: no counter %s in nft output: %s", name, out)
}
