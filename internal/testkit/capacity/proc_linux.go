package capacity

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/netstat"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"golang.org/x/sys/unix"
)

// The machine and the server under test: CPU placement, what the machine
// and a process spent, the namespace's UDP drops, and the server process.

// PinSelf confines every thread of this process, and so every thread it
// starts later, to cpus.
func PinSelf(cpus ...int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity(%d): %w", tid, err)
		}
	}
	return nil
}

// machineBusy returns the time all CPUs were busy since boot (/proc/stat,
// in the kernel's ticks, so coarse).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100 // USER_HZ
}

// taskFigures is what a thread's /proc task directory says of its
// scheduling (taskSched), or the sum of it over a process's threads
// (total).
type taskFigures struct {
	cpu     time.Duration // time on a CPU
	runq    time.Duration // time spent waiting runnable for one
	wakeups int64         // voluntary context switches: each a sleep, so a wake-up follows
}

// threadSched reads every thread of process pid (self for 0) at one
// moment, by thread ID.
func threadSched(pid int) map[string]taskFigures {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	ents, _ := os.ReadDir(dir)
	m := make(map[string]taskFigures, len(ents))
	for _, e := range ents {
		m[e.Name()] = taskSched(filepath.Join(dir, e.Name()))
	}
	return m
}

// total sums a reading of threadSched over the process's threads.
func total(threads map[string]taskFigures) taskFigures {
	var t taskFigures
	for _, f := range threads {
		t.cpu, t.runq, t.wakeups = t.cpu+f.cpu, t.runq+f.runq, t.wakeups+f.wakeups
	}
	return t
}

// busiest is the thread that spent the most time on a CPU between two
// readings of threadSched: its figures over that span (a thread born in
// between counts from zero).
func busiest(before, after map[string]taskFigures) taskFigures {
	var top taskFigures
	for tid, a := range after {
		b := before[tid]
		d := taskFigures{a.cpu - b.cpu, a.runq - b.runq, a.wakeups - b.wakeups}
		if d.cpu > top.cpu {
			top = d
		}
	}
	return top
}

// taskSched reads one thread's /proc task directory: its schedstat (time
// on a CPU, time waiting for one) and its voluntary context switches.
func taskSched(dir string) taskFigures {
	var f taskFigures
	if b, err := os.ReadFile(filepath.Join(dir, "schedstat")); err == nil {
		var run, wait int64
		fmt.Sscan(string(b), &run, &wait)
		f.cpu, f.runq = time.Duration(run), time.Duration(wait)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		f.wakeups = parseVoluntary(string(b))
	}
	return f
}

// parseVoluntary returns voluntary_ctxt_switches from a task's status file.
func parseVoluntary(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// rcvbufErrors reads Udp RcvbufErrors of namespace ns (0 if unreadable).
func rcvbufErrors(lab *netlab.Lab, ns string) int64 {
	return snmp(lab, ns)[netstat.UDPRcvbufErrors]
}

// snmp reads namespace ns's /proc/net/snmp counters (none if unreadable).
func snmp(lab *netlab.Lab, ns string) netstat.Counters {
	var c netstat.Counters
	_ = lab.Do(ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		c, err = netstat.Parse(string(b))
		return err
	})
	return c
}

// serverProc is a running server.
type serverProc struct {
	cmd     *exec.Cmd
	logf    string
	metrics string // udpstp's metrics endpoint, host:port in the server namespace; "" for OB-UDPST
	done    chan struct{}
}

func startServer(lab *netlab.Lab, s Server, port, cpu int, dir string, extra ...string) (*serverProc, error) {
	addr := lab.ServerAddr.String()
	args := extra
	var metricsAddr string
	switch s.Kind {
	case Udpstp:
		// No per-source Setup rate limit and no per-source cap below the
		// server's own: every connection of the generator comes from one
		// address (the default cap, 128, would refuse the rest of 200).
		// The metrics endpoint (a TCP port of the control port's number)
		// carries the Load Sender's Skipped Bursts by direction.
		metricsAddr = net.JoinHostPort(addr, strconv.Itoa(port))
		args = append([]string{"server", "-p", strconv.Itoa(port), "--setup-rate", "0",
			"--max-conns-per-source", strconv.Itoa(control.MaxConnsPerServer), "--metrics-listen", metricsAddr},
			append(args, addr)...)
	case OBUDPST:
		args = append([]string{"-p", strconv.Itoa(port)}, append(args, addr)...)
	}
	logf := filepath.Join(dir, fmt.Sprintf("server-%d.log", port))
	f, err := os.Create(logf)
	if err != nil {
		return nil, err
	}
	cmd := lab.Command(lab.ServerNS, s.Bin, args...)
	if cpu >= 0 {
		cmd = lab.Command(lab.ServerNS, "taskset", append([]string{"-c", strconv.Itoa(cpu), s.Bin}, args...)...)
	}
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	p := &serverProc{cmd: cmd, logf: logf, metrics: metricsAddr, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	// Ready when its control port is bound in the server namespace.
	end := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-p.done:
			b, _ := os.ReadFile(logf)
			return nil, fmt.Errorf("%s exited at start: %s", s.Name, lastLines(b, 5))
		default:
		}
		if portBound(lab, port) {
			return p, nil
		}
		if time.Now().After(end) {
			p.stop()
			return nil, fmt.Errorf("%s: control port %d not bound after 5 s", s.Name, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// portBound reports whether a UDP socket is bound to port in the server
// namespace.
func portBound(lab *netlab.Lab, port int) bool {
	found := false
	_ = lab.Do(lab.ServerNS, func() error {
		want := fmt.Sprintf(":%04X ", port)
		for _, f := range []string{"/proc/thread-self/net/udp", "/proc/thread-self/net/udp6"} {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte(want)) {
				found = true
			}
		}
		return nil
	})
	return found
}

func (p *serverProc) pid() int { return p.cmd.Process.Pid }

// stop interrupts the server and waits for it (kills it after 5 s).
func (p *serverProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
