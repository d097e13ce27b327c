//go:build !linux || portable

package engine

import (
	"errors"
	"net/netip"
	"time"
)

// EnablePktInfo is not built here: a server off Linux answers from the
// address its kernel picks, as OB-UDPST does.
func (s *Socket) EnablePktInfo() error { return errors.ErrUnsupported }

// RecvFromTo is RecvFrom; the destination is unknown here.
func (s *Socket) RecvFromTo(b []byte, deadline time.Time) (int, netip.AddrPort, netip.Addr, error) {
	n, from, err := s.RecvFrom(b, deadline)
	return n, from, netip.Addr{}, err
}

// SendToFrom is SendTo here.
func (s *Socket) SendToFrom(b []byte, to netip.AddrPort, _ netip.Addr) error { return s.SendTo(b, to) }
