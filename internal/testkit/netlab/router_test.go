//go:build linux

package netlab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// families returns the client and server address pairs of l: IPv4, and
// IPv6 when the kernel has it.
func families(l *Lab) [][2]netip.Addr {
	p := [][2]netip.Addr{{l.ClientAddr, l.ServerAddr}}
	if l.ServerAddr6.IsValid() {
		p = append(p, [2]netip.Addr{l.ClientAddr6, l.ServerAddr6})
	}
	return p
}

// famName names an address family for subtests.
func famName(a netip.Addr) string {
	if a.Is6() {
		return "v6"
	}
	return "v4"
}

// addrPort is c's local address.
func addrPort(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// recvFrom waits up to d for one datagram on c and returns its text and
// source; ok is false when none came.
func recvFrom(t *testing.T, c *net.UDPConn, d time.Duration) (string, netip.AddrPort, bool) {
	t.Helper()
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(d))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "", netip.AddrPort{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n]), netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), true
}

// send writes s from c to dst.
func send(t *testing.T, c *net.UDPConn, s string, dst netip.AddrPort) {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort([]byte(s), dst); err != nil {
		t.Fatalf("send to %v: %v", dst, err)
	}
}

// withAndWithoutRelay runs f on a lab of cfg, once with the relay in the
// path and once without, where the relay changes how the router's
// conntrack sees each packet.
func withAndWithoutRelay(t *testing.T, cfg Config, f func(t *testing.T, l *Lab)) {
	for _, relay := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay=%v", relay), func(t *testing.T) {
			c := cfg
			c.Relay = relay
			if relay {
				c.Up.Relay.Delay = 2 * time.Millisecond
			}
			f(t, New(t, c))
		})
	}
}

// TestNAT: behind masquerade the server sees the client come from the
// router's address; plain masquerade keeps the client's port for every
// flow of one socket, masquerade random gives each flow (each server port
// the socket talks to) its own random external port; replies find their
// way back to the client socket.
func TestNAT(t *testing.T) {
	for _, mode := range []NAT{Masquerade, MasqueradeRandom} {
		t.Run(strings.ReplaceAll(mode.String(), " ", "-"), func(t *testing.T) {
			withAndWithoutRelay(t, Config{NAT: mode}, func(t *testing.T, l *Lab) {
				for _, p := range families(l) {
					t.Run(famName(p[0]), func(t *testing.T) {
						nat := l.NATAddr
						if p[0].Is6() {
							nat = l.NATAddr6
						}
						cli := listen(t, l, l.ClientNS, p[0])
						var ports []uint16
						for i := range 3 {
							srv := listen(t, l, l.ServerNS, p[1])
							send(t, cli, fmt.Sprint("flow ", i), addrPort(srv))
							msg, from, ok := recvFrom(t, srv, 5*time.Second)
							if !ok {
								t.Fatalf("flow %d: nothing arrived at %v", i, addrPort(srv))
							}
							if from.Addr() != nat || msg != fmt.Sprint("flow ", i) {
								t.Fatalf("flow %d: %q from %v, want it from the NAT address %v", i, msg, from, nat)
							}
							ports = append(ports, from.Port())
							send(t, srv, "reply", from)
							msg, back, ok := recvFrom(t, cli, 5*time.Second)
							if !ok || msg != "reply" || back != addrPort(srv) {
								t.Fatalf("flow %d: reply %q from %v (%v), want from %v", i, msg, back, ok, addrPort(srv))
							}
						}
						own := addrPort(cli).Port()
						switch mode {
						case Masquerade:
							if ports[0] != own || ports[1] != own || ports[2] != own {
								t.Errorf("external ports %v, want the client's own %d for every flow", ports, own)
							}
						case MasqueradeRandom:
							// Three random ports in 64k that are all equal
							// would happen once in 4 billion runs.
							if ports[0] == ports[1] && ports[1] == ports[2] {
								t.Errorf("external ports %v: one port for every flow, want random ones", ports)
							}
						}
						t.Logf("client port %d, external ports %v", own, ports)
					})
				}
			})
		})
	}
}

// TestFirewall: the stateful firewall in front of the server admits new
// flows only to its port; a flow the server opened (as the Null Request
// opens the Test Connection's) is then admitted both ways; what it drops
// is counted. Behind masquerade the server's datagram finds no NAT mapping
// and never reaches the client, but it opens the firewall all the same
// for the client's external port, which masquerade keeps.
func TestFirewall(t *testing.T) {
	for _, nat := range []NAT{NoNAT, Masquerade} {
		t.Run("nat="+strings.ReplaceAll(nat.String(), " ", "-"), func(t *testing.T) {
			withAndWithoutRelay(t, Config{FirewallPort: 4000, NAT: nat}, func(t *testing.T, l *Lab) {
				for _, p := range families(l) {
					t.Run(famName(p[0]), func(t *testing.T) { firewallCase(t, l, p, nat) })
				}
			})
		})
	}
}

func firewallCase(t *testing.T, l *Lab, p [2]netip.Addr, nat NAT) {
	before, err := l.FirewallRefused()
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := l.ListenUDP(l.ServerNS, netip.AddrPortFrom(p[1], 4000))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	test := listen(t, l, l.ServerNS, p[1])
	// Another client socket, whose flow through the NAT would otherwise
	// give the server's datagram below a mapping.
	other := listen(t, l, l.ClientNS, p[0])
	send(t, other, "to the test port", addrPort(test))
	if msg, _, ok := recvFrom(t, test, 300*time.Millisecond); ok {
		t.Fatalf("the firewall let %q through to a port it does not admit", msg)
	}
	cli := listen(t, l, l.ClientNS, p[0])
	send(t, cli, "setup", addrPort(ctl))
	msg, seenFrom, ok := recvFrom(t, ctl, 5*time.Second)
	if !ok || msg != "setup" {
		t.Fatalf("control port: got %q, %v", msg, ok)
	}
	// The server opens the test port's flow towards the client, as it
	// saw it.
	send(t, test, "null", seenFrom)
	msg, from, ok := recvFrom(t, cli, time.Second)
	switch {
	case nat == NoNAT && (!ok || msg != "null" || from != addrPort(test)):
		t.Fatalf("server-opened flow: got %q from %v, %v", msg, from, ok)
	case nat != NoNAT && ok:
		t.Fatalf("the NAT let the server's %q through without a mapping", msg)
	}
	send(t, cli, "activation", addrPort(test))
	if msg, _, ok := recvFrom(t, test, 5*time.Second); !ok || msg != "activation" {
		t.Fatalf("after the server's datagram the firewall still refused the client's (%q, %v)", msg, ok)
	}
	after, err := l.FirewallRefused()
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 1 {
		t.Errorf("the firewall counted %d refusals, want 1", after-before)
	}
}

// pmtuSocket is a UDP socket in ns connected to dst that sets DF and never
// fragments (IP_PMTUDISC_DO), so that it learns the path MTU from the
// router's ICMP.
func pmtuSocket(t *testing.T, l *Lab, ns string, dst netip.AddrPort) int {
	t.Helper()
	var fd int
	err := l.Do(ns, func() error {
		fam, level, opt, do := unix.AF_INET6, unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO
		var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(dst.Port()), Addr: dst.Addr().As16()}
		if dst.Addr().Is4() {
			fam, level, opt, do = unix.AF_INET, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO
			sa = &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}
		}
		var err error
		if fd, err = unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, level, opt, do); err != nil {
			return err
		}
		return unix.Connect(fd, sa)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// pathMTU reads what the kernel learned of the path MTU of connected fd.
func pathMTU(t *testing.T, fd int, v6 bool) int {
	t.Helper()
	level, opt := unix.IPPROTO_IP, unix.IP_MTU
	if v6 {
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_MTU
	}
	mtu, err := unix.GetsockoptInt(fd, level, opt)
	if err != nil {
		t.Fatalf("IP_MTU: %v", err)
	}
	return mtu
}

// snmp reads counter key ("Icmp:OutDestUnreachs", "Icmp6OutPktTooBigs")
// of namespace ns.
func snmp(t *testing.T, l *Lab, ns, key string) int64 {
	t.Helper()
	m, err := l.Counters(ns)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := m[key]
	if !ok {
		t.Fatalf("no %s in %s's counters", key, ns)
	}
	return v
}

// TestNarrowLink: a datagram of the full MTU with DF set meets the narrow
// link; the router answers with ICMP (fragmentation needed, packet too
// big), the sender's kernel learns the narrow MTU, and a datagram of that
// size then crosses. In the middle (the relay's devices) the router
// answers both directions; a narrow client or server link is answered
// for what comes from the other side.
func TestNarrowLink(t *testing.T) {
	for _, c := range []struct {
		link  NarrowLink
		name  string
		froms []Direction // directions whose sender the router answers
	}{
		{NarrowMiddle, "middle", []Direction{Up, Down}},
		{NarrowServerLink, "server-link", []Direction{Up}},
		{NarrowClientLink, "client-link", []Direction{Down}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const narrow = 1400
			l := New(t, Config{Narrow: Narrow{MTU: narrow, Link: c.link}})
			for _, p := range families(l) {
				v6 := p[0].Is6()
				for _, dir := range c.froms {
					t.Run(famName(p[0])+"-"+dir.String(), func(t *testing.T) {
						srcNS, dstNS, dstAddr := l.ClientNS, l.ServerNS, p[1]
						if dir == Down {
							srcNS, dstNS, dstAddr = l.ServerNS, l.ClientNS, p[0]
						}
						rx := listen(t, l, dstNS, dstAddr)
						fd := pmtuSocket(t, l, srcNS, addrPort(rx))
						key, hdr := "Icmp:OutDestUnreachs", 28
						if v6 {
							key, hdr = "Icmp6OutPktTooBigs", 48
						}
						icmpBefore := snmp(t, l, l.RouterNS, key)
						full := make([]byte, DefaultMTU-hdr)
						if _, err := unix.Write(fd, full); err != nil {
							t.Fatalf("first full-size send: %v", err)
						}
						if _, _, ok := recvFrom(t, rx, 300*time.Millisecond); ok {
							t.Fatal("a full-size datagram crossed the narrow link")
						}
						if mtu := pathMTU(t, fd, v6); mtu != narrow {
							t.Errorf("the sender's kernel learned path MTU %d, want %d", mtu, narrow)
						}
						if n := snmp(t, l, l.RouterNS, key) - icmpBefore; n != 1 {
							t.Errorf("the router sent %d %s, want 1", n, key)
						}
						// The connected socket reports the ICMP once, as
						// EMSGSIZE on its next send (the fault
						// names); the send after that goes.
						small := make([]byte, narrow-hdr)
						_, err := unix.Write(fd, small)
						if errors.Is(err, unix.EMSGSIZE) {
							_, err = unix.Write(fd, small)
						}
						if err != nil {
							t.Fatalf("send at the narrow MTU: %v", err)
						}
						if msg, _, ok := recvFrom(t, rx, 5*time.Second); !ok || len(msg) != narrow-hdr {
							t.Errorf("a datagram of the narrow MTU did not cross (%d bytes, %v)", len(msg), ok)
						}
					})
				}
			}
		})
	}
}

// TestForgeUDP: a datagram forged in the router with the server's
// address and port reaches the client as if the server had sent it.
func TestForgeUDP(t *testing.T) {
	l := New(t, Config{Relay: true})
	for _, p := range families(l) {
		cli := listen(t, l, l.ClientNS, p[0])
		src := netip.AddrPortFrom(p[1], 4242)
		if err := l.ForgeUDP(l.RouterNS, src, addrPort(cli), []byte("forged")); err != nil {
			t.Fatal(err)
		}
		if msg, from, ok := recvFrom(t, cli, 5*time.Second); !ok || msg != "forged" || from != src {
			t.Errorf("%v: got %q from %v (%v), want \"forged\" from %v", famName(p[0]), msg, from, ok, src)
		}
	}
}
