package discover

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
)

// Prefix marks a host argument as a name to discover servers under
// (`srv:NAME`).
const Prefix = "srv:"

// Service and Proto name the SRV records looked up: _udpst._udp.NAME, the
// name OB-UDPST's protocol would have (RFC 2782's _Service._Proto.Name;
// the control port is UDP).
const (
	Service = "udpst"
	Proto   = "udp"
)

// Is reports whether host is a `srv:NAME` argument.
func Is(host string) bool { return strings.HasPrefix(host, Prefix) }

// MaxCandidates bounds the candidates of one name: a zone that lists
// hundreds of targets or addresses (a hostile one, or a mistake) makes a
// client send Setups to at most this many, the first in RFC 2782's order
// (docs/fleet.md). Addresses no server has (unspecified, which reach the
// local host; multicast) are left out before the count.
const MaxCandidates = 8

// Candidate is one server to try: the SRV target (or NAME) it came from,
// one of its addresses and the control port.
type Candidate struct {
	Name string     // the SRV target, or NAME itself; no trailing dot
	Addr netip.Addr // the address to try
	Port int        // the control port: the SRV record's, or the default
	// Priority is the SRV record's (RFC 2782: lower first); 0 for a
	// name's own addresses and a list's servers, all one priority.
	Priority uint16
}

// String is "name (addr:port)", or "addr:port" when the name is the
// address.
func (c Candidate) String() string {
	ap := netip.AddrPortFrom(c.Addr, uint16(c.Port)).String()
	if c.Name == "" || c.Name == c.Addr.String() {
		return ap
	}
	return c.Name + " (" + ap + ")"
}

// Resolver is what Lookup asks: *net.Resolver has both methods.
type Resolver interface {
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrNoService is a name whose SRV record says, with the target ".", that
// the service is decidedly not offered there (RFC 2782).
var ErrNoService = errors.New("the SRV record says the service is not offered here (target \".\")")

// Lookup returns the candidates for host (`srv:NAME`, or NAME): the SRV
// records of _udpst._udp.NAME in RFC 2782's order (Order, drawn with rng),
// each target's addresses in the resolver's order; when NAME has no such
// records, NAME's own addresses on defaultPort. A NAME that starts with
// "_" is taken as the full SRV name. network is "ip", "ip4" or "ip6": the
// address families the client may use. Targets that do not resolve are
// left out; no candidate at all is an error that says what was asked.
func Lookup(ctx context.Context, r Resolver, host string, defaultPort int, network string, rng *rand.Rand) ([]Candidate, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(host, Prefix), ".")
	if name == "" {
		return nil, fmt.Errorf("%s: no name after %q", host, Prefix)
	}
	service, proto := Service, Proto
	srvName := "_" + Service + "._" + Proto + "." + name
	if strings.HasPrefix(name, "_") {
		service, proto, srvName = "", "", name
	}
	_, recs, err := r.LookupSRV(ctx, service, proto, name)
	if len(recs) == 1 && (recs[0].Target == "." || recs[0].Target == "") {
		return nil, fmt.Errorf("%s: %w", srvName, ErrNoService)
	}
	if len(recs) == 0 {
		if strings.HasPrefix(name, "_") {
			return nil, fmt.Errorf("SRV %s: %w", srvName, err)
		}
		// No SRV records: NAME's own addresses (RFC 2782's fallback to
		// the address records), also when the SRV query failed (a
		// resolver that does not answer SRV queries), as a plain host
		// name would be resolved.
		addrs, aerr := lookupAddrs(ctx, r, network, name)
		if aerr != nil {
			why := "no SRV records"
			if !isNotFound(err) {
				why = "SRV lookup failed (" + err.Error() + ")"
			}
			return nil, fmt.Errorf("%s at %s, and %s has no address: %w", why, srvName, name, aerr)
		}
		var out []Candidate
		for _, a := range addrs {
			if len(out) == MaxCandidates {
				break
			}
			out = append(out, Candidate{Name: name, Addr: a, Port: defaultPort})
		}
		return out, nil
	}
	var out []Candidate
	var failed []string
	for _, rec := range Order(recs, rng) {
		if len(out) >= MaxCandidates {
			break // no lookup of the targets past the cap either
		}
		target := strings.TrimSuffix(rec.Target, ".")
		if target == "" {
			continue // "." among other records: no server there
		}
		addrs, aerr := lookupAddrs(ctx, r, network, target)
		if aerr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", target, aerr))
			continue
		}
		for _, a := range addrs {
			if len(out) < MaxCandidates {
				out = append(out, Candidate{Name: target, Addr: a, Port: int(rec.Port), Priority: rec.Priority})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("SRV %s: no target has an address (%s)", srvName, strings.Join(failed, "; "))
	}
	return out, nil
}

// lookupAddrs returns host's addresses of network's families, unmapped,
// or an error when there is none.
func lookupAddrs(ctx context.Context, r Resolver, network, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = r.LookupNetIP(ctx, network, host); err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, min(len(addrs), MaxCandidates))
	for _, a := range addrs {
		if a = a.Unmap(); !a.IsUnspecified() && !a.IsMulticast() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s address a server may have", network)
	}
	return out, nil
}

// isNotFound reports a name or record type that does not exist (NXDOMAIN,
// or no records of the type), as opposed to a resolver that failed.
func isNotFound(err error) bool {
	var de *net.DNSError
	return err == nil || errors.As(err, &de) && de.IsNotFound
}

// Server is a host (a name or an address) and its control port: one
// server of a list.
type Server struct {
	Host string
	Port int
}

// LookupList returns the candidates of a list of servers (the agent's
// servers of a test: docs/agent.md), in the list's order and all of one
// priority: each host's first address of network's families, as a single
// server is resolved, at most MaxCandidates of them. failed says why each
// server left out has no candidate; no candidate at all is an error.
func LookupList(ctx context.Context, r Resolver, servers []Server, network string) (out []Candidate, failed []string, err error) {
	for i, s := range servers {
		if len(out) == MaxCandidates {
			failed = append(failed, fmt.Sprintf("%d more not looked up: at most %d", len(servers)-i, MaxCandidates))
			break
		}
		addrs, aerr := lookupAddrs(ctx, r, network, s.Host)
		if aerr != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", s.Host, aerr))
			continue
		}
		out = append(out, Candidate{Name: s.Host, Addr: addrs[0], Port: s.Port})
	}
	if len(out) == 0 {
		return nil, failed, fmt.Errorf("no server of the list has an address (%s)", strings.Join(failed, "; "))
	}
	return out, failed, nil
}
