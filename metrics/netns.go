package metrics

import "github.com/udpstp/udpstp/internal/netstat"

// The kernel's UDP buffer errors of the server's network namespace: a
// datagram dropped because a socket's receive buffer was full (the Engine
// Threads did not read it in time) or refused for a full send buffer. They
// come from /proc/self/net/snmp (IPv4) and /proc/self/net/snmp6 (IPv6),
// read at scrape time. They count every UDP socket of the namespace, the
// control sockets and any other program's too, not only the test sockets:
// per-socket drop counts (SO_MEMINFO) would need each socket's descriptor
// at scrape time, racing with its Close, or a counter per read on the
// data path, which the endpoint must not add.

// udpBufferErrors are the namespace's UDP buffer errors of one family.
type udpBufferErrors struct {
	Rcvbuf, Sndbuf uint64
	OK             bool // the counters were found
}

// udpErrorsOf picks the receive and send buffer errors, under keys rcv
// and snd, out of the text of /proc/net/snmp or /proc/net/snmp6. Text the
// parser rejects, or without the counters, gives none (OK false).
func udpErrorsOf(text, rcv, snd string) udpBufferErrors {
	c, err := netstat.Parse(text)
	if err != nil {
		return udpBufferErrors{}
	}
	r, ok := c[rcv]
	return udpBufferErrors{Rcvbuf: uint64(r), Sndbuf: uint64(c[snd]), OK: ok}
}

// udpNetnsSource reports what read returns for IPv4 and IPv6; a family
// whose counters were not found is left out.
func udpNetnsSource(read func() (v4, v6 udpBufferErrors)) Source {
	return func(emit func(Sample)) {
		v4, v6 := read()
		for _, f := range []struct {
			family string
			e      udpBufferErrors
		}{{"ipv4", v4}, {"ipv6", v6}} {
			if !f.e.OK {
				continue
			}
			l := []Label{{"family", f.family}}
			emit(Sample{Name: "netns_udp_receive_buffer_errors",
				Help: "UDP datagrams the kernel dropped for a full receive buffer, on any UDP socket of the server's network namespace",
				Kind: Counter, Labels: l, Value: float64(f.e.Rcvbuf)})
			emit(Sample{Name: "netns_udp_send_buffer_errors",
				Help: "UDP datagrams the kernel refused for a full send buffer, on any UDP socket of the server's network namespace",
				Kind: Counter, Labels: l, Value: float64(f.e.Sndbuf)})
		}
	}
}
