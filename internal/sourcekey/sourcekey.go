// Package sourcekey says what one source is, for the limits kept per
// source (the server's Setup Requests, the agent's live-progress streams):
// an IPv4 address, or an IPv6 address's /64, since one host may hold a
// whole /64 and take a new address from it for every request. An
// IPv4-mapped IPv6 address is its IPv4 address.
package sourcekey

import "net/netip"

// Of is the key a is limited by.
func Of(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
