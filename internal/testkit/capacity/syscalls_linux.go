package capacity

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/udpstp/udpstp/internal/netstat"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// System calls per packet: how many system calls the server made over the
// steady window, counted by the kernel's raw_syscalls:sys_enter
// tracepoint through perf (an in-kernel counter: no ptrace, no sampling,
// the same small cost for every server), over the UDP datagrams sent and
// received in the server's namespace meanwhile (only the server uses UDP
// there). Without perf, or where the tracepoint is not readable, the
// figure is not known (-1) and the table says n/a.

// syscallCounter counts one process's system calls from start to stop.
type syscallCounter struct {
	cmd   *exec.Cmd
	out   bytes.Buffer
	start time.Time // just before perf started: its count begins after
}

// countSyscalls starts counting pid's system calls; nil when perf is
// missing or refuses (the figure is then not known).
func countSyscalls(pid int) *syscallCounter {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil
	}
	c := &syscallCounter{start: time.Now()}
	c.cmd = exec.Command(perf, "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid))
	c.cmd.Stderr = &c.out // perf stat writes its counts to stderr
	if err := c.cmd.Start(); err != nil {
		return nil
	}
	// perf attaches within a few milliseconds; the window is seconds long.
	time.Sleep(50 * time.Millisecond)
	return c
}

// stop ends the count and returns it scaled to window, the time the
// packets were counted over, -1 if it is not known. perf counts from its
// start, 50 ms and a namespace read before the packets' window opens, to
// this call, a read after it closes: about 1 % more on an 8 s window,
// which the scaling takes away (perf's own attach, a few ms, is left).
func (c *syscallCounter) stop(window time.Duration) int64 {
	if c == nil {
		return -1
	}
	counted := time.Since(c.start)
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	n := parsePerfCount(c.out.String(), "raw_syscalls:sys_enter")
	if n < 0 || counted <= 0 || window <= 0 || window > counted {
		return n
	}
	return int64(float64(n) * float64(window) / float64(counted))
}

// parsePerfCount reads event's count from perf stat -x, output
// ("12345,,raw_syscalls:sys_enter,..."); -1 if it is not there or was not
// counted.
func parsePerfCount(out, event string) int64 {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 || f[2] != event {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1 // "<not counted>", "<not supported>"
		}
		return n
	}
	return -1
}

// udpPackets is the UDP datagrams sent and received in namespace ns so
// far (IPv4: the lab's addresses).
func udpPackets(lab *netlab.Lab, ns string) int64 {
	c := snmp(lab, ns)
	return c[netstat.UDPInDatagrams] + c[netstat.UDPOutDatagrams]
}

// perPacket is syscalls over packets, -1 when either is not known.
func perPacket(syscalls, packets int64) float64 {
	if syscalls < 0 || packets <= 0 {
		return -1
	}
	return float64(syscalls) / float64(packets)
}

// formatPerPacket is a per-packet figure for the table.
func formatPerPacket(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}
