//go:build !linux

package netlab

import (
	"fmt"
	"net/netip"
)

// ForgeUDP needs Linux (transparent sockets).
func (l *Lab) ForgeUDP(string, netip.AddrPort, netip.AddrPort, []byte) error {
	return fmt.Errorf("%w: forging needs Linux", ErrUnavailable)
}
