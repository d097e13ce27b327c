package netlab

import (
	"fmt"
	"strconv"
	"strings"
)

// Counters reads the IP, ICMP, UDP and IPv6 counters of namespace ns
// (/proc/net/snmp and /proc/net/snmp6, which show the namespace of the
// reader), keyed as "Udp:RcvbufErrors", "Icmp:OutDestUnreachs" (snmp's
// table and column) or "Icmp6OutPktTooBigs" (snmp6's name): what a
// test reads to tell a loss it set from one the machine made, or to see
// that the router answered a narrow link.
func (l *Lab) Counters(ns string) (map[string]int64, error) {
	if err := l.checkNS(ns); err != nil {
		return nil, err
	}
	files := []string{"/proc/net/snmp"}
	if l.addrs.client6.IsValid() {
		files = append(files, "/proc/net/snmp6")
	}
	out, err := run(nil, l.tools.ip, append([]string{"netns", "exec", ns, "cat"}, files...)...)
	if err != nil {
		return nil, err
	}
	return parseCounters(string(out))
}

// parseCounters reads snmp's pairs of lines ("Udp: InDatagrams ..." then
// "Udp: 12 ...") and snmp6's "name value" lines.
func parseCounters(text string) (map[string]int64, error) {
	m := map[string]int64{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		switch {
		case len(f) == 0:
		case strings.HasSuffix(f[0], ":"):
			if i+1 >= len(lines) {
				return nil, fmt.Errorf("netlab: counters: %q has no line of values", lines[i])
			}
			v := strings.Fields(lines[i+1])
			if len(v) != len(f) || v[0] != f[0] {
				return nil, fmt.Errorf("netlab: counters: %q does not match %q", lines[i+1], lines[i])
			}
			for j := 1; j < len(f); j++ {
				n, err := strconv.ParseInt(v[j], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("netlab: counters: %s%s: %w", f[0], f[j], err)
				}
				m[f[0]+f[j]] = n
			}
			i++
		case len(f) == 2:
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("netlab: counters: %s: %w", f[0], err)
			}
			m[f[0]] = n
		default:
			return nil, fmt.Errorf("netlab: counters: unexpected line %q", lines[i])
		}
	}
	return m, nil
}
