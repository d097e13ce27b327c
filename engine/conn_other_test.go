//go:build !linux || portable

package engine

import (
	"net/netip"
	"testing"
)

// refuseAll makes every send of s fail with ENOBUFS.
func refuseAll(s *Socket) {
	s.sys.sendFn = func([]byte, netip.AddrPort, int, int) error { return sysENOBUFS }
}

// acceptPartly makes each send call of s take only accept(n) of the n
// datagrams of its plan and refuse the rest with ENOBUFS, as a full queue
// does. The fallback socket writes a plan datagram by datagram, so the
// refusal ends the call.
func acceptPartly(_ *testing.T, s *Socket, accept func(n int) int) {
	k := 0
	s.sys.sendFn = func(p []byte, to netip.AddrPort, i, n int) error {
		if i == 0 {
			k = accept(n)
		}
		if i >= k {
			return sysENOBUFS
		}
		_, err := s.sys.conn.WriteToUDPAddrPort(p, to)
		return err
	}
}
