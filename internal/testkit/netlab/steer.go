package netlab

import (
	"fmt"
	"strings"
)

// SteerRouter makes the router's receive work run on the given CPUs: it
// sets Receive Packet Steering (rps_cpus) on both of the router's veth
// ends, so that what an endpoint sends is forwarded, and received at the
// other endpoint, on those CPUs rather than in the sender's own context.
//
// Without it a veth hands each datagram to its peer through netif_rx and
// the softirq that carries it on (the router's forwarding, the second
// veth, the receiver's UDP delivery) runs at the sender's next
// local_bh_enable, on the sender's CPU and charged to the sender's
// process. A server measured in such a lab pays for the network as well
// as itself. This is the lab's counterpart of a deployment that steers
// receive softirq off a server's CPUs (the engine design's guidance).
// No CPUs clears the steering.
func (l *Lab) SteerRouter(cpus ...int) error {
	var mask uint64
	for _, c := range cpus {
		if c < 0 || c >= 64 {
			return fmt.Errorf("netlab: steer router: CPU %d out of range 0..63", c)
		}
		mask |= 1 << c
	}
	var cmds []string
	for _, dev := range []string{routerServerDev, routerClientDev} {
		cmds = append(cmds, fmt.Sprintf("echo %x > /sys/class/net/%s/queues/rx-0/rps_cpus", mask, dev))
	}
	// `ip netns exec` mounts the router namespace's own sysfs, where
	// its devices' queues are.
	if _, err := run(nil, l.tools.ip, "netns", "exec", l.RouterNS, "sh", "-c", strings.Join(cmds, " && ")); err != nil {
		return fmt.Errorf("netlab: steer router receive to CPUs %v: %w", cpus, err)
	}
	return nil
}
