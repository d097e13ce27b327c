package netlab

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

const (
	// nsPrefix starts the name of every namespace this package creates,
	// and nothing else may use it: Sweep deletes what matches.
	nsPrefix = "udpstp-"
	// netnsDir is where `ip netns` keeps its bind mounts (iproute2's
	// NETNS_RUN_DIR; /var/run is /run on current systems).
	netnsDir = "/var/run/netns"
	// idBits is the size of a lab id: 2^14 blocks of 8 addresses (two
	// /30 links) fill 198.18.0.0/15.
	idBits = 14
)

// The veth ends. They live only inside their namespaces, so fixed names
// cannot collide (and they fit the 15 characters of IFNAMSIZ).
const (
	clientDev       = "veth-c"  // in ClientNS, towards the router
	routerClientDev = "veth-rc" // in RouterNS, towards the client: Down tbf
	routerServerDev = "veth-rs" // in RouterNS, towards the server: Up tbf
	serverDev       = "veth-s"  // in ServerNS, towards the router
)

// Roles in a namespace name: client, router, server, and Available's
// probe.
const (
	roleClient = 'c'
	roleRouter = 'r'
	roleServer = 's'
	roleProbe  = 'p'
)

// nsNameRE matches udpstp-<pid>-<id>-<role>; group 1 is the creating pid.
var nsNameRE = regexp.MustCompile(`^udpstp-([0-9]+)-[0-9a-f]{4}-[crsp]$`)

// nsName is the name of a namespace with role of lab id created by pid.
func nsName(pid int, id uint16, role byte) string {
	return fmt.Sprintf("%s%d-%04x-%c", nsPrefix, pid, id, role)
}

// nsCreator returns the pid encoded in a namespace name of this package.
func nsCreator(name string) (int, bool) {
	m := nsNameRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	return pid, err == nil && pid > 0
}

// randomID draws a lab id. Uniqueness is not required (a name collision
// is retried and addresses are per namespace), only likely.
func randomID() uint16 { return uint16(rand.IntN(1 << idBits)) }

// addrs are the addresses of a lab: two links, client-router and
// router-server, each an IPv4 /30 and an IPv6 /64.
type addrs struct {
	client, routerC, routerS, server     netip.Addr // IPv4
	client6, routerC6, routerS6, server6 netip.Addr // IPv6
}

const (
	prefix4 = 30
	prefix6 = 64
)

// labRange4 and labRange6 hold every lab address: the benchmarking ranges
// of RFC 2544 and RFC 5180.
var (
	labRange4 = netip.MustParsePrefix("198.18.0.0/15")
	labRange6 = netip.MustParsePrefix("2001:2::/48")
)

// labAddrs returns the addresses of lab id. IPv4: the block
// 198.18.0.0 + 8*id; the client link is its first /30 (client .1,
// router .2), the server link its second (router .5, server .6). IPv6:
// the client link is 2001:2:0:2*id::/64 (client ::1, router ::2), the
// server link 2001:2:0:2*id+1::/64 (router ::1, server ::2).
func labAddrs(id uint16) addrs {
	base := uint32(198)<<24 | uint32(18)<<16 | uint32(id&(1<<idBits-1))<<3
	v4 := func(n uint32) netip.Addr {
		return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	v6 := func(subnet uint16, host byte) netip.Addr {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x00, 0x02, 0, 0, byte(subnet >> 8), byte(subnet), 15: host})
	}
	c6, s6 := 2*(id&(1<<idBits-1)), 2*(id&(1<<idBits-1))+1
	return addrs{
		client: v4(base + 1), routerC: v4(base + 2), routerS: v4(base + 5), server: v4(base + 6),
		client6: v6(c6, 1), routerC6: v6(c6, 2), routerS6: v6(s6, 1), server6: v6(s6, 2),
	}
}

// nsPath is the file that holds namespace name open.
func nsPath(name string) string { return filepath.Join(netnsDir, name) }

// listNS returns the names of the namespaces known to `ip netns`.
func listNS() ([]string, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netlab: listing namespaces: %w", err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// Sweep deletes the namespaces a killed run left behind: every udpstp-*
// namespace whose creating process (the pid in its name) no longer
// exists, after killing any process still running inside it (an orphaned
// server would keep the namespace and its veth alive). Namespaces of live
// processes, including this one, are never touched, so concurrent test
// runs are safe. A reused pid only delays a sweep. Caveat: a process in
// another pid namespace sharing /var/run/netns looks dead from here.
// The first Build of a process calls Sweep.
func Sweep() error {
	names, err := listNS()
	if err != nil {
		return err
	}
	var t tools
	var errs []error
	self := os.Getpid()
	for _, name := range names {
		pid, ok := nsCreator(name)
		if !ok || pid == self || pidAlive(pid) {
			continue
		}
		if t.ip == "" {
			if t.ip, err = lookTool("ip"); err != nil {
				return fmt.Errorf("netlab: sweep: %w", err)
			}
		}
		if err := deleteNS(t, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteNS kills every process in namespace name but this one and deletes
// the namespace; one that is already gone is not an error.
func deleteNS(t tools, name string) error {
	var errs []error
	out, err := run(nil, t.ip, "netns", "pids", name)
	switch {
	case stderrContains(err, "No such file"):
		return nil
	case err != nil:
		errs = append(errs, err)
	}
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := killPid(pid); err != nil {
			errs = append(errs, fmt.Errorf("netlab: killing pid %d in namespace %s: %w", pid, name, err))
		}
	}
	if _, err := run(nil, t.ip, "netns", "delete", name); err != nil && !stderrContains(err, "No such file") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
