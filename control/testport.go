package control

// The test port: the server picks each Test Connection's port itself,
// uniformly at random over a range, so that an off-path attacker who forges
// a Setup Request from a victim's address (and so never sees the Setup
// Response) must guess it (docs/security.md, "The test port"). bind(0)
// would hand out the kernel's next ephemeral port, which a second Setup
// from the attacker's own address reveals.

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
)

// PortRange is an inclusive range of UDP ports.
type PortRange struct{ Lo, Hi uint16 }

// FallbackTestPorts is the range used where the kernel's ephemeral range
// cannot be read: IANA's dynamic ports (RFC 6335 section 6).
var FallbackTestPorts = PortRange{Lo: 49152, Hi: 65535}

// Size is the number of ports in r.
func (r PortRange) Size() int { return int(r.Hi) - int(r.Lo) + 1 }

// Bits is log2 of the range's size: what the port adds to an off-path
// attacker's guess.
func (r PortRange) Bits() float64 { return math.Log2(float64(r.Size())) }

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ParsePortRange reads "LO-HI" (also "LO HI" or "LO\tHI", as
// ip_local_port_range holds it), 1 <= LO <= HI <= 65535.
func ParsePortRange(s string) (PortRange, error) {
	f := strings.FieldsFunc(strings.TrimSpace(s), func(r rune) bool { return r == '-' || r == ' ' || r == '\t' })
	if len(f) != 2 {
		return PortRange{}, fmt.Errorf("port range %q: want LO-HI", s)
	}
	lo, err1 := strconv.ParseUint(f[0], 10, 16)
	hi, err2 := strconv.ParseUint(f[1], 10, 16)
	if err1 != nil || err2 != nil || lo == 0 || lo > hi {
		return PortRange{}, fmt.Errorf("port range %q: want 1 <= LO <= HI <= 65535", s)
	}
	return PortRange{Lo: uint16(lo), Hi: uint16(hi)}, nil
}

// maxPortTries bounds the binds tried for one Test Connection: a port in
// use (EADDRINUSE) is drawn again. With a range a third full, 16 tries all
// fail with probability (1/3)^16, about 2e-8.
const maxPortTries = 16

// randomPort draws a port uniformly from r with crypto/rand (rejection
// sampling: no bias towards the low end of the range).
func randomPort(r PortRange) uint16 {
	n := uint32(r.Size())
	limit := math.MaxUint32 - math.MaxUint32%n
	var b [4]byte
	for {
		rand.Read(b[:])
		if v := binary.LittleEndian.Uint32(b[:]); v < limit {
			return r.Lo + uint16(v%n)
		}
	}
}

// listenRandom opens a test socket on a random port of r, drawing again
// while the port is in use, at most maxPortTries times.
func listenRandom(local func(port uint16) (Socket, error), r PortRange) (Socket, error) {
	var err error
	for range maxPortTries {
		var s Socket
		if s, err = local(randomPort(r)); err == nil {
			return s, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free test port in %v after %d tries: %w", r, maxPortTries, err)
}
