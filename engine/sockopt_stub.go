//go:build !unix && !windows

package engine

import (
	"errors"
	"net/netip"
)

// Platforms without socket options (js, wasip1, plan9): the engine builds,
// the options fail.

const (
	sysSOLSocket   = 0
	sysSOSndbuf    = 0
	sysSORcvbuf    = 0
	sysIPProtoIP   = 0
	sysIPTOS       = 0
	sysIPProtoIPv6 = 0
	sysIPv6TClass  = 0
)

var errNoSockopt = errors.New("socket options not supported on this platform")

// sysENOBUFS stands for a refused send; no send is refused here.
var sysENOBUFS = errNoSockopt

func getsockoptInt(fd uintptr, level, opt int) (int, error) { return 0, errNoSockopt }

func setsockoptInt(fd uintptr, level, opt, v int) error { return errNoSockopt }

func isBackpressureErr(err error) bool { return false }

// rawReader is empty: tryRead reads nothing here.
type rawReader struct{}

func (x *sysSocket) tryRead(buf []byte) (n int, from netip.AddrPort, ok bool, err error) {
	return 0, netip.AddrPort{}, false, nil
}
