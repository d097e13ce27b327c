package netlab

import (
	"fmt"
	"net/netip"
)

// extraPrefix4 holds the further client addresses of AddClientAddrs: a /24
// of 198.19.0.0/16 (the benchmarking range's other half) per lab. Labs
// cannot collide (the addresses exist only in their namespaces); the id
// keeps them apart in logs.
func (l *Lab) extraPrefix4() netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(l.id), 0}), 24)
}

// AddClientAddrs gives the client namespace n more IPv4 addresses (1 to
// 250), as hosts behind the client link: the router routes them through
// the client, the server back through the router. Tests use them as many
// sources, forged ones and victims (a socket bound to one of them sends
// with that source; what is sent to them arrives in the client
// namespace). Call it once per lab.
func (l *Lab) AddClientAddrs(n int) ([]netip.Addr, error) {
	if n < 1 || n > 250 {
		return nil, fmt.Errorf("netlab: AddClientAddrs(%d): want 1 to 250", n)
	}
	p := l.extraPrefix4()
	steps := [][]string{
		{"-n", l.RouterNS, "route", "add", p.String(), "via", l.addrs.client.String()},
		{"-n", l.ServerNS, "route", "add", p.String(), "via", l.addrs.routerS.String()},
	}
	var out []netip.Addr
	a := p.Addr()
	for range n {
		a = a.Next()
		out = append(out, a)
		steps = append(steps, []string{"-n", l.ClientNS, "addr", "add", netip.PrefixFrom(a, 32).String(), "dev", clientDev})
	}
	for _, s := range steps {
		if _, err := run(nil, l.tools.ip, s...); err != nil {
			return nil, fmt.Errorf("netlab: AddClientAddrs: %w", err)
		}
	}
	return out, nil
}
