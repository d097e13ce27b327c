package netlab

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
)

// ErrUnavailable is wrapped by every error that means "the lab cannot run
// here" (as opposed to "building it failed"): New skips the test on it.
var ErrUnavailable = errors.New("netlab: lab not available")

// Available returns nil when a lab without loss can run here: Linux,
// running as root, ip and tc found, and a network namespace with a veth
// pair and a tbf qdisc can actually be created (tried once per process in
// a throw-away namespace). Otherwise the error, which wraps
// ErrUnavailable, says exactly what is missing.
func Available() error {
	p := probeOnce()
	return p.base
}

// AvailableFor is Available for cfg: a lab with loss, NAT or a firewall
// also needs nft and nf_tables in the kernel; one with the relay needs
// /dev/net/tun.
func AvailableFor(cfg Config) error {
	p := probeOnce()
	if p.base != nil {
		return p.base
	}
	if cfg.usesNft() && p.nft != nil {
		return p.nft
	}
	if cfg.usesRelay() {
		return p.tun
	}
	return nil
}

// nftAvailable reports whether nftables works here (Cut needs it).
func nftAvailable() error {
	p := probeOnce()
	if p.base != nil {
		return p.base
	}
	return p.nft
}

// probeResult is what probing this machine found; tools is set when base
// is nil.
type probeResult struct {
	tools tools
	base  error // nil if a lab without loss can run
	nft   error // nil if nftables works too
	tun   error // nil if TUN devices can be made (the relay)
}

var probeOnce = sync.OnceValue(probe)

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// probe checks the preconditions that need no namespace first, reporting
// all of them at once, then builds a throw-away namespace with what a lab
// needs.
func probe() probeResult {
	var r probeResult
	if runtime.GOOS != "linux" {
		r.base = unavailable("needs Linux, this is %s", runtime.GOOS)
		r.nft = r.base
		return r
	}
	var missing []string
	if uid := os.Geteuid(); uid != 0 {
		missing = append(missing, fmt.Sprintf("not running as root (euid %d)", uid))
	}
	var err error
	if r.tools.ip, err = lookTool("ip"); err != nil {
		missing = append(missing, err.Error()+" (install iproute2)")
	}
	if r.tools.tc, err = lookTool("tc"); err != nil {
		missing = append(missing, err.Error()+" (install iproute2)")
	}
	if len(missing) > 0 {
		r.base = unavailable("%s", strings.Join(missing, "; "))
		r.nft = r.base
		return r
	}
	nftPath, nftErr := lookTool("nft")
	if nftErr != nil {
		r.nft = unavailable("loss needs nftables: %v (install nftables)", nftErr)
	} else {
		r.tools.nft = nftPath
	}
	r.base, r.nft = probeNamespace(r.tools, r.nft)
	r.tun = probeTUN()
	return r
}

// probeNamespace creates a namespace, a veth pair and a tbf qdisc in it,
// and an nftables table if nft was found, then deletes the namespace.
func probeNamespace(t tools, nftErr error) (base, nft error) {
	name := nsName(os.Getpid(), randomID(), roleProbe)
	if _, err := run(nil, t.ip, "netns", "add", name); err != nil {
		return unavailable("cannot create a network namespace: %v", err), nftErr
	}
	defer func() {
		if err := deleteNS(t, name); err != nil && base == nil {
			base = unavailable("cannot delete a network namespace: %v", err)
		}
	}()
	if _, err := run(nil, t.ip, "-n", name, "link", "add", "p0", "type", "veth", "peer", "name", "p1"); err != nil {
		return unavailable("cannot create a veth pair: %v", err), nftErr
	}
	if _, err := run(nil, t.tc, "-n", name, "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "1mbit", "burst", "10kb", "latency", "10ms"); err != nil {
		return unavailable("cannot add a tbf qdisc: %v", err), nftErr
	}
	if t.nft != "" {
		if _, err := run(nil, t.ip, "netns", "exec", name, t.nft, "add", "table", "inet", "udpstp_probe"); err != nil {
			nftErr = unavailable("loss needs nftables, which does not work here: %v", err)
		}
	}
	return nil, nftErr
}
