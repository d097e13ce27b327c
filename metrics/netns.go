package metrics

import (
	"github.com/udpstp/udpstp/internal/netstat"
	"github.com/udpstp/udpstp/metrics/family"
)

// The kernel's UDP buffer errors of the server's network namespace: a
// datagram dropped because a socket's receive buffer was full (the Engine
// Threads did not read it in time) or refused for a full send buffer. They
// come from /proc/self/net/snmp (IPv4) and /proc/self/net/snmp6 (IPv6),
// read at scrape time. They count every UDP socket of the namespace, the
// control sockets and any other program's too, not only the test sockets:
// per-socket drop counts (SO_MEMINFO) would need each socket's descriptor
// at scrape time, racing with its Close, or a counter per read on the
// data path, which the endpoint must not add.

// udpBufferErrors are the namespace's UDP buffer errors of one family,
// and its IP reassembly failures other than timeouts
// (netstat.Counters.ReassemblyDrops): a path that fragments the test's
// datagrams and loses fragments fills the reassembly memory, and then
// every fragment is dropped (docs/accuracy.md, "Reassembly memory").
type udpBufferErrors struct {
	Rcvbuf, Sndbuf uint64
	OK             bool // the counters were found
	Reasm          uint64
	ReasmOK        bool // the reassembly counters were found
}

// netnsErrors picks one family's (v6: IPv6) buffer errors and
// reassembly drops out of the namespace's counters; a family whose
// counters are missing gives none (OK, ReasmOK false).
func netnsErrors(c netstat.Counters, v6 bool) udpBufferErrors {
	rcv, snd := netstat.UDPRcvbufErrors, netstat.UDPSndbufErrors
	if v6 {
		rcv, snd = netstat.UDP6RcvbufErrors, netstat.UDP6SndbufErrors
	}
	r, ok := c[rcv]
	e := udpBufferErrors{Rcvbuf: uint64(r), Sndbuf: uint64(c[snd]), OK: ok}
	d, ok := c.ReassemblyDrops(v6)
	e.Reasm, e.ReasmOK = uint64(max(d, 0)), ok
	return e
}

// udpNetnsSource reports what read returns for IPv4 and IPv6; a family
// whose counters were not found is left out.
func udpNetnsSource(read func() (v4, v6 udpBufferErrors)) Source {
	return func(emit func(family.Sample)) {
		v4, v6 := read()
		for _, f := range []struct {
			family string
			e      udpBufferErrors
		}{{"ipv4", v4}, {"ipv6", v6}} {
			l := []string{f.family}
			if f.e.OK {
				emit(family.Sample{Family: famNetnsRcvbuf, Values: l, Value: float64(f.e.Rcvbuf)})
				emit(family.Sample{Family: famNetnsSndbuf, Values: l, Value: float64(f.e.Sndbuf)})
			}
			if f.e.ReasmOK {
				emit(family.Sample{Family: famNetnsReasm, Values: l, Value: float64(f.e.Reasm)})
			}
		}
	}
}

// UDPNetns reports the kernel's UDP buffer errors and IP reassembly
// drops of the process's network namespace, read through
// netstat.ReadSelf at each scrape; off Linux, or unreadable, none.
func UDPNetns() Source {
	return udpNetnsSource(func() (v4, v6 udpBufferErrors) {
		c, err := netstat.ReadSelf()
		if err != nil {
			return v4, v6
		}
		return netnsErrors(c, false), netnsErrors(c, true)
	})
}
