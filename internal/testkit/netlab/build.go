package netlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"
)

// build does the work of Build, step by step; Build closes the lab when a
// step fails, which deletes whatever was created.
func (l *Lab) build(afterStep func(step string) error) error {
	if err := l.createNamespaces(); err != nil {
		return err
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"veth", l.addVeths},
		{"sysctl", l.setSysctls},
		{"addresses", l.addAddresses},
		{"up", l.linksUp},
		{"routes", l.addRoutes}, // a gateway must be on a link that is up
		{"relay", l.addRelay},
		{"router", l.addRouterRules},
		{"shape", func() error {
			if err := l.applyShape(Down, l.cfg.Down); err != nil {
				return err
			}
			return l.applyShape(Up, l.cfg.Up)
		}},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			return err
		}
		if afterStep != nil {
			if err := afterStep(s.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxNameTries bounds the retries on a namespace name that exists
// already (a clash of random ids within one pid, or a reused pid).
const maxNameTries = 8

// createNamespaces creates the three namespaces under fresh names and
// derives the addresses from the id.
func (l *Lab) createNamespaces() error {
	pid := os.Getpid()
next:
	for try := 0; try < maxNameTries; try++ {
		id := randomID()
		names := [3]string{nsName(pid, id, roleClient), nsName(pid, id, roleRouter), nsName(pid, id, roleServer)}
		for _, n := range names {
			if err := l.addNamespace(n); err != nil {
				if stderrContains(err, "File exists") {
					continue next // what was created is deleted by Close
				}
				return err
			}
		}
		l.id = id
		l.ClientNS, l.RouterNS, l.ServerNS = names[0], names[1], names[2]
		l.addrs = labAddrs(id)
		if !ipv6Enabled() {
			l.addrs.client6, l.addrs.routerC6, l.addrs.routerS6, l.addrs.server6 = netip.Addr{}, netip.Addr{}, netip.Addr{}, netip.Addr{}
		}
		l.ClientAddr, l.ServerAddr = l.addrs.client, l.addrs.server
		l.ClientAddr6, l.ServerAddr6 = l.addrs.client6, l.addrs.server6
		if l.cfg.NAT != NoNAT {
			l.NATAddr, l.NATAddr6 = l.addrs.routerS, l.addrs.routerS6
		}
		return nil
	}
	return fmt.Errorf("netlab: no free namespace name after %d tries", maxNameTries)
}

// addNamespace creates namespace name and records it for Close. A lab
// closed meanwhile (by an interrupt) gets no new namespace.
func (l *Lab) addNamespace(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: lab closed while being built")
	}
	if _, err := run(nil, l.tools.ip, "netns", "add", name); err != nil {
		return err
	}
	l.created = append(l.created, name)
	return nil
}

// ipv6Enabled reports whether the kernel has IPv6 (not disabled at boot).
func ipv6Enabled() bool {
	_, err := os.Stat("/proc/net/if_inet6")
	return err == nil
}

// end is one end of a veth link, and what it needs to know of its peer.
type end struct {
	ns, dev      string
	mac          net.HardwareAddr
	a4, a6       netip.Addr
	peerMAC      net.HardwareAddr
	peer4, peer6 netip.Addr
}

// linkEnds returns the four veth ends: client, router towards the client,
// router towards the server, server. Each Ethernet address is locally
// administered and ends in the host number of its IPv4 address.
func (l *Lab) linkEnds() [4]end {
	mac := func(host byte) net.HardwareAddr {
		return net.HardwareAddr{0x02, 0x00, 0x00, byte(l.id >> 8), byte(l.id), host}
	}
	a := l.addrs
	c, rc, rs, s := mac(1), mac(2), mac(5), mac(6)
	return [4]end{
		{l.ClientNS, clientDev, c, a.client, a.client6, rc, a.routerC, a.routerC6},
		{l.RouterNS, routerClientDev, rc, a.routerC, a.routerC6, c, a.client, a.client6},
		{l.RouterNS, routerServerDev, rs, a.routerS, a.routerS6, s, a.server, a.server6},
		{l.ServerNS, serverDev, s, a.server, a.server6, rs, a.routerS, a.routerS6},
	}
}

// addVeths creates both veth pairs with each end directly in its
// namespace (never in the initial one), with the MTU (a narrow link's on
// that link) and gso_max_segs 1 (see Offloads in the package doc).
func (l *Lab) addVeths() error {
	e := l.linkEnds()
	for i, pair := range [][2]end{{e[0], e[1]}, {e[3], e[2]}} {
		a, b := pair[0], pair[1]
		mtu := strconv.Itoa(l.cfg.MTU)
		if n := l.cfg.Narrow; n.MTU > 0 && ((i == 0 && n.Link == NarrowClientLink) || (i == 1 && n.Link == NarrowServerLink)) {
			mtu = strconv.Itoa(n.MTU)
		}
		if _, err := run(nil, l.tools.ip, "link", "add",
			"name", a.dev, "address", a.mac.String(), "mtu", mtu, "gso_max_segs", "1", "netns", a.ns,
			"type", "veth", "peer",
			"name", b.dev, "address", b.mac.String(), "mtu", mtu, "gso_max_segs", "1", "netns", b.ns); err != nil {
			return err
		}
	}
	return nil
}

// setSysctls makes the router forward, turns off its reverse-path filter
// (the relay's packets come back on its TUN devices, not on the veth
// towards their source) and its ICMP rate limits (so a narrow link is
// answered every time), and turns off IPv6 duplicate address detection on
// every veth before it goes up: not only for our addresses (nodad) but for
// the link-local ones, which would otherwise stay tentative for a second.
func (l *Lab) setSysctls() error {
	type sysctl struct{ path, value string }
	byNS := map[string][]sysctl{
		l.RouterNS: {
			{"/proc/sys/net/ipv4/ip_forward", "1"},
			{"/proc/sys/net/ipv4/conf/all/rp_filter", "0"},
			{"/proc/sys/net/ipv4/conf/default/rp_filter", "0"},
			{"/proc/sys/net/ipv4/icmp_ratelimit", "0"},
		},
	}
	if l.addrs.client6.IsValid() {
		byNS[l.RouterNS] = append(byNS[l.RouterNS],
			sysctl{"/proc/sys/net/ipv6/conf/all/forwarding", "1"},
			sysctl{"/proc/sys/net/ipv6/icmp/ratelimit", "0"})
		for _, e := range l.linkEnds() {
			byNS[e.ns] = append(byNS[e.ns], sysctl{"/proc/sys/net/ipv6/conf/" + e.dev + "/accept_dad", "0"})
		}
	}
	for ns, settings := range byNS {
		// /proc/sys/net shows the namespace of the thread that opens it.
		err := inNamespace(nsPath(ns), func() error {
			for _, s := range settings {
				if err := os.WriteFile(s.path, []byte(s.value), 0); err != nil {
					return fmt.Errorf("netlab: sysctl in %s: %w", ns, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// addAddresses brings lo up everywhere and gives every veth end its
// addresses and a permanent neighbour entry for its peer: no ARP or
// neighbour discovery ever crosses a link, and the first datagram does
// not wait for a resolution (whose first IPv6 solicit can arrive before
// the peer's address is ready and cost a 1 s retransmit).
func (l *Lab) addAddresses() error {
	for _, ns := range []string{l.ClientNS, l.RouterNS, l.ServerNS} {
		if _, err := run(nil, l.tools.ip, "-n", ns, "link", "set", "dev", "lo", "up"); err != nil {
			return err
		}
	}
	for _, e := range l.linkEnds() {
		if _, err := run(nil, l.tools.ip, "-n", e.ns, "addr", "add", netip.PrefixFrom(e.a4, prefix4).String(), "dev", e.dev); err != nil {
			return err
		}
		if e.a6.IsValid() {
			if _, err := run(nil, l.tools.ip, "-n", e.ns, "addr", "add", netip.PrefixFrom(e.a6, prefix6).String(), "dev", e.dev, "nodad"); err != nil {
				return err
			}
		}
		for _, peer := range []netip.Addr{e.peer4, e.peer6} {
			if !peer.IsValid() {
				continue
			}
			if _, err := run(nil, l.tools.ip, "-n", e.ns, "neigh", "replace", peer.String(),
				"lladdr", e.peerMAC.String(), "dev", e.dev, "nud", "permanent"); err != nil {
				return err
			}
		}
	}
	return nil
}

// addRoutes routes each endpoint to the other's link through the router.
// Only the lab's own subnets are routed: there is no default route, so
// traffic cannot leave the lab by mistake.
func (l *Lab) addRoutes() error {
	a := l.addrs
	routes := []struct {
		ns  string
		dst netip.Addr
		via netip.Addr
	}{
		{l.ClientNS, a.server, a.routerC},
		{l.ServerNS, a.client, a.routerS},
		{l.ClientNS, a.server6, a.routerC6},
		{l.ServerNS, a.client6, a.routerS6},
	}
	for _, r := range routes {
		if !r.dst.IsValid() {
			continue
		}
		bits := prefix4
		if r.dst.Is6() {
			bits = prefix6
		}
		dst := netip.PrefixFrom(r.dst, bits).Masked().String()
		if _, err := run(nil, l.tools.ip, "-n", r.ns, "route", "add", dst, "via", r.via.String()); err != nil {
			return err
		}
	}
	return nil
}

// linksUp sets every veth end up.
func (l *Lab) linksUp() error {
	for _, e := range l.linkEnds() {
		if _, err := run(nil, l.tools.ip, "-n", e.ns, "link", "set", "dev", e.dev, "up"); err != nil {
			return err
		}
	}
	return l.waitOperUp()
}

// operUpWait bounds the wait for the links' operational state.
const operUpWait = 10 * time.Second

// waitOperUp waits until every link end is operationally up. `ip link set
// up` returns before the kernel's link watch has activated the device's
// queueing discipline; until it has, what the link is given is dropped
// (noop). That is the likely reason why, on a loaded machine, two of three
// labs built at once lost all 3 datagrams of their first exchange
// (TestParallelLabsDoNotCollide).
func (l *Lab) waitOperUp() error {
	deadline := time.Now().Add(operUpWait)
	for _, e := range l.linkEnds() {
		for {
			out, err := run(nil, l.tools.ip, "-n", e.ns, "-j", "link", "show", "dev", e.dev)
			if err != nil {
				return err
			}
			var links []struct {
				OperState string `json:"operstate"`
			}
			if err := json.Unmarshal(out, &links); err != nil {
				return fmt.Errorf("netlab: parsing ip -j link show %s: %w", e.dev, err)
			}
			if len(links) == 1 && links[0].OperState == "UP" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("netlab: %s in %s not up after %v: %s", e.dev, e.ns, operUpWait, out)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}
