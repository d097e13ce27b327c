package metrics

import (
	"bufio"
	"io"
	"strconv"
	"strings"
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

// udpBufferErrors are the namespace's UDP buffer errors of one family.
type udpBufferErrors struct {
	Rcvbuf, Sndbuf uint64
	OK             bool // the counters were found
}

// parseSNMP reads the "Udp:" header and value lines of /proc/net/snmp.
func parseSNMP(r io.Reader) udpBufferErrors {
	var e udpBufferErrors
	sc := bufio.NewScanner(r)
	var header []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		for i := 1; i < len(f) && i < len(header); i++ {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				continue
			}
			switch header[i] {
			case "RcvbufErrors":
				e.Rcvbuf, e.OK = v, true
			case "SndbufErrors":
				e.Sndbuf = v
			}
		}
		break
	}
	return e
}

// parseSNMP6 reads the Udp6RcvbufErrors and Udp6SndbufErrors lines of
// /proc/net/snmp6.
func parseSNMP6(r io.Reader) udpBufferErrors {
	var e udpBufferErrors
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Udp6RcvbufErrors":
			e.Rcvbuf, e.OK = v, true
		case "Udp6SndbufErrors":
			e.Sndbuf = v
		}
	}
	return e
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
