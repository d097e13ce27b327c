// Package listenaddr chooses the network of a TCP listener from the
// address an operator gave (the server's metrics endpoint, the agent's
// page, the collector's listeners): an IPv4 address, 0.0.0.0 too, listens
// on IPv4 only, an IPv6 address on IPv6 only, and [::] on both. Go's
// "tcp" would put 0.0.0.0 on a dual-stack socket, which listens on IPv6
// too.
package listenaddr

import (
	"net"
	"net/netip"
)

// Network is the network addr (host:port) asks for; a host name is left
// to the resolver ("tcp": its first address).
func Network(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp"
	}
	a, err := netip.ParseAddr(host)
	switch {
	case err != nil:
		return "tcp"
	case a.Is4():
		return "tcp4"
	case a.IsUnspecified():
		return "tcp" // [::]: IPv4 and IPv6
	}
	return "tcp6"
}
