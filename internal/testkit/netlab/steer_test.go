package netlab

import (
	"strings"
	"testing"
)

// TestSteerRouter: both router ends get the CPU mask, and no CPUs clear it.
func TestSteerRouter(t *testing.T) {
	l := New(t, Config{})
	if err := l.Command(l.RouterNS, "test", "-e", "/sys/class/net/"+routerServerDev+"/queues/rx-0/rps_cpus").Run(); err != nil {
		t.Skip("no receive packet steering in this kernel (CONFIG_RPS)")
	}
	read := func(dev string) string {
		out, err := l.Command(l.RouterNS, "cat", "/sys/class/net/"+dev+"/queues/rx-0/rps_cpus").CombinedOutput()
		if err != nil {
			t.Fatalf("read rps_cpus of %s: %v: %s", dev, err, out)
		}
		return strings.TrimLeft(strings.TrimSpace(string(out)), "0,")
	}
	if err := l.SteerRouter(0); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{routerServerDev, routerClientDev} {
		if got := read(dev); got != "1" {
			t.Errorf("%s: rps_cpus %q after steering to CPU 0, want mask 1", dev, got)
		}
	}
	if err := l.SteerRouter(); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{routerServerDev, routerClientDev} {
		if got := read(dev); got != "" {
			t.Errorf("%s: rps_cpus %q after clearing, want 0", dev, got)
		}
	}
	if err := l.SteerRouter(64); err == nil {
		t.Error("CPU 64 accepted")
	}
}
