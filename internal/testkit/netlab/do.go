package netlab

import (
	"net"
	"net/netip"
)

// Do runs fn on an OS thread that is inside namespace ns (ClientNS,
// ServerNS or RouterNS) and returns its error. Sockets fn creates belong
// to ns for good and may be used from any goroutine afterwards; goroutines
// fn starts do not run in ns, nor do sockets opened after fn returns.
func (l *Lab) Do(ns string, fn func() error) error {
	if err := l.checkNS(ns); err != nil {
		return err
	}
	return inNamespace(nsPath(ns), fn)
}

// ListenUDP opens a UDP socket in namespace ns bound to laddr (a zero
// port picks one; the zero AddrPort binds all addresses and a free port).
func (l *Lab) ListenUDP(ns string, laddr netip.AddrPort) (*net.UDPConn, error) {
	var conn *net.UDPConn
	err := l.Do(ns, func() error {
		var a *net.UDPAddr
		if laddr.IsValid() {
			a = net.UDPAddrFromAddrPort(laddr)
		}
		var err error
		conn, err = net.ListenUDP("udp", a)
		return err
	})
	return conn, err
}
