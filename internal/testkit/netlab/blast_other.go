//go:build !linux

package netlab

import (
	"fmt"
	"net/netip"
	"time"
)

func (l *Lab) blastBursts(netip.AddrPort, int64, time.Duration) (int64, error) {
	return 0, fmt.Errorf("%w: the blaster needs Linux", ErrUnavailable)
}
