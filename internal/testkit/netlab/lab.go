package netlab

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"sync"
	"testing"
)

// Lab is a running lab: a client and a server namespace, each joined by a
// veth pair to a router namespace that shapes what it forwards. Its
// methods are safe for concurrent use.
type Lab struct {
	// ClientNS, RouterNS and ServerNS are the namespace names, for
	// Command, Do, ListenUDP and `ip -n`. Tests run their endpoints in
	// ClientNS and ServerNS; RouterNS only forwards.
	ClientNS, RouterNS, ServerNS string
	// ClientDev and ServerDev are the endpoints' veth ends (towards the
	// router).
	ClientDev, ServerDev string
	// ClientAddr and ServerAddr are the endpoints' IPv4 addresses, on two
	// /30 links in 198.18.0.0/15.
	ClientAddr, ServerAddr netip.Addr
	// ClientAddr6 and ServerAddr6 are the IPv6 addresses, on two /64
	// links in 2001:2::/48; invalid when the kernel has no IPv6.
	ClientAddr6, ServerAddr6 netip.Addr
	// NATAddr and NATAddr6 are the addresses the server sees the client
	// come from behind the lab's NAT (the router's on the server link);
	// invalid without NAT.
	NATAddr, NATAddr6 netip.Addr

	tools tools
	id    uint16
	addrs addrs // all addresses, the router's included

	mu      sync.Mutex
	cfg     Config   // normalized; Shape updates it
	created []string // namespaces created so far, deleted by Close
	closed  bool
	tbfOn   [2]bool // by Direction: a tbf qdisc is installed
	lossOn  [2]bool // by Direction: a loss table is installed
	relay   *relay  // the relay in the router's path, if any
	cut     bool    // Cut(true) is in force
}

// sweepOnce runs Sweep before the first lab of a process.
var sweepOnce sync.Once

// New builds a lab for a test and tears it down in t.Cleanup. It skips the
// test, saying why, when the lab cannot run here (see AvailableFor), and
// fails it when building fails.
func New(t testing.TB, cfg Config) *Lab {
	t.Helper()
	if err := AvailableFor(cfg); err != nil {
		t.Skip(err)
	}
	l, err := Build(cfg)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab: teardown: %v", err)
		}
	})
	return l
}

// Build builds a lab; the caller must Close it. When a step fails, Build
// deletes what it created before returning the error. An error wrapping
// ErrUnavailable means the lab cannot run here at all.
func Build(cfg Config) (*Lab, error) { return buildLab(cfg, nil) }

// buildLab is Build; afterStep, if set, is called after each step of
// build with the step's name, and an error makes the step fail (its
// tests: a failed step tears down what was built).
func buildLab(cfg Config, afterStep func(step string) error) (*Lab, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if err := AvailableFor(cfg); err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { _ = Sweep() }) // best effort: a failed sweep leaves only stale namespaces
	l := &Lab{tools: probeOnce().tools, cfg: cfg, ClientDev: clientDev, ServerDev: serverDev}
	register(l)
	if err := l.build(afterStep); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// Close tears the lab down: it kills any process still running in the
// lab's namespaces and deletes them, which removes the veth pairs, qdiscs
// and nftables tables with them. It is idempotent (later calls return
// nil) and safe to call concurrently with other methods, which then fail.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	names := l.created
	l.mu.Unlock()
	defer unregister(l)
	// The relay first: its TUN descriptors hold the router namespace.
	errs := []error{l.closeRelay()}
	for _, name := range names {
		if err := deleteNS(l.tools, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Config returns the lab's configuration with the defaults filled in and
// the latest Shape calls applied.
func (l *Lab) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// Command returns a command that runs name with args inside namespace ns
// (ClientNS, ServerNS or RouterNS) through `ip netns exec`. Starting it
// fails if ns is not one of the lab's. Close kills what is still running
// inside.
func (l *Lab) Command(ns string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(l.tools.ip, append([]string{"netns", "exec", ns, name}, args...)...)
	if err := l.checkNS(ns); err != nil {
		cmd.Err = err
	}
	return cmd
}

// checkNS returns an error unless ns is one of the lab's namespaces.
func (l *Lab) checkNS(ns string) error {
	if ns == "" || (ns != l.ClientNS && ns != l.ServerNS && ns != l.RouterNS) {
		return fmt.Errorf("netlab: %q is not a namespace of this lab (%s, %s, %s)", ns, l.ClientNS, l.RouterNS, l.ServerNS)
	}
	return nil
}

// String names the lab for logs.
func (l *Lab) String() string {
	return fmt.Sprintf("netlab %s (%v) <-> %s <-> %s (%v)", l.ClientNS, l.ClientAddr, l.RouterNS, l.ServerNS, l.ServerAddr)
}
