package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Freeze stops every process of the cluster with SIGSTOP (the postmaster
// and its children: backends, checkpointer, WAL writer): a database that
// hangs rather than refuses. Connections stay open and their calls get no
// answer; new connections are accepted by the kernel and never answered.
// It returns thaw, which sends SIGCONT to the same processes; the test's
// end thaws them too, so that the cluster can be stopped.
func (c *Cluster) Freeze() (thaw func() error, err error) {
	pids, err := c.processes()
	if err != nil {
		return nil, err
	}
	signal := func(sig syscall.Signal) error {
		var errs []error
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, fmt.Errorf("PostgreSQL: signal %v to %d: %w", sig, pid, err))
			}
		}
		return errors.Join(errs...)
	}
	// The postmaster first: it forks no new backend while the others stop.
	if err := signal(syscall.SIGSTOP); err != nil {
		signal(syscall.SIGCONT)
		return nil, err
	}
	thawed := false
	thaw = func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if thawed {
			return nil
		}
		thawed = true
		return signal(syscall.SIGCONT)
	}
	c.mu.Lock()
	c.thaws = append(c.thaws, thaw)
	c.mu.Unlock()
	return thaw, nil
}

// processes is the postmaster's PID (postmaster.pid's first line) and its
// children's (/proc/PID/stat's fourth field).
func (c *Cluster) processes() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: not running: %w", err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	pm, err := strconv.Atoi(string(bytes.TrimSpace(first)))
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: postmaster.pid: %w", err)
	}
	pids := []int{pm}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces, not ')'s end.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(string(f[1])); err == nil && ppid == pm {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}
